// Command unherd runs the simulator's scenarios and reports what retry
// policies do to a dependency.
package main

func main() {}
