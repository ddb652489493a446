// Package bench compares unherd with peer libraries side by side. It is a
// separate module so users of unherd never download the peers.
package bench
