package core

// maxStackGuards is how many guards' tickets a Call holds without
// allocating.
const maxStackGuards = 4
