// Package freelist keeps records that are no longer in use for reuse, so
// that the steady state of a hot path allocates none.
//
// A [List] is a bounded stack of pointers: Put keeps a record while the
// list has room (beyond that the record is left to the garbage collector,
// so a burst does not pin its peak memory for ever), and Get returns the
// last record kept, or a new one. Unlike sync.Pool, a List is not cleared
// by garbage collections and takes no lock: it is used under its owner's
// mutex. The owner resets a record before it puts it, and makes sure that
// no other reference to it is used again (the admission scheduler tells a
// stale Permit from the record's new holder by a generation number).
package freelist
