# Reference solution of verify-checksums: one shell command a line, run from the work dir.
ls -la downloads
cd downloads && sha256sum -c SHA256SUMS 2>/dev/null | grep -v ': OK$' | sed 's/: FAILED.*$//' | sort > ../bad_files.txt
cat bad_files.txt
