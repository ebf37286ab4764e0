// Package repodocs holds tests about the repository as a whole: its
// documentation stands alone, pointing at nothing outside the repository.
package repodocs
