// Package pkg is the root of docrepo's shared module. The code lives in its
// sub-packages; see the README's repository layout for the map.
package pkg
