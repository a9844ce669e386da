//go:build !unix

package main

import (
	"io"
	"os"
)

// pollable is f: outside Unix, stdin is read as it is.
func pollable(f *os.File) io.ReadCloser { return f }
