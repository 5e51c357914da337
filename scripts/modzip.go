//go:build ignore

// modzip writes the module zip of the tree in the current directory: every
// regular file under "MODULE@VERSION/", as the Go module proxy serves a
// tagged module. Usage: go run scripts/modzip.go MODULE@VERSION OUT.zip.
// scripts/release-check.sh runs it on a copy of the tree without the
// sibling modules' directories.
package main

import (
	"archive/zip"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: go run modzip.go MODULE@VERSION OUT.zip")
	}
	prefix, out := os.Args[1], os.Args[2]
	f, err := os.Create(out)
	if err != nil {
		log.Fatal(err)
	}
	w := zip.NewWriter(f)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		dst, err := w.Create(prefix + "/" + filepath.ToSlash(path))
		if err != nil {
			return err
		}
		_, err = io.Copy(dst, src)
		return err
	})
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		log.Fatal(err)
	}
}
