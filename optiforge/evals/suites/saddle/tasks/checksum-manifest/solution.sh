# Reference solution of checksum-manifest: one shell command a line, run from the work dir.
find release -type f
cd release && find . -type f | sed 's|^\./||' | sort | while IFS= read -r f; do md5sum "$f"; done > ../MANIFEST.md5
cat MANIFEST.md5
