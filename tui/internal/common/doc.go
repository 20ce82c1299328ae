// Package common holds what the TUI's components share: the Theme and the
// KeyMap, the text helpers they draw with, the engines' views, the lag
// history, the requests and running action the dialog and the seed view
// show, the seed generations, and the bookkeeping of when a view's rows
// were last built.
package common
