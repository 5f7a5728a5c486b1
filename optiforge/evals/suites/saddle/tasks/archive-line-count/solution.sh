# Reference solution of archive-line-count: one shell command a line, run from the work dir.
tar -tzvf bundle.tar.gz
mkdir -p extracted && tar -xzf bundle.tar.gz -C extracted
find extracted -type f -name '*.py' -exec cat {} + | wc -l > py_lines.txt
cat py_lines.txt
