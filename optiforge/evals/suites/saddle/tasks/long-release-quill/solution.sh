# Reference solution of long-release-quill: one shell command a line, run from the work dir.
cat NOTES.txt
cat VERSION
cat quill/quill_version.py
cat setup.cfg
head -n 3 CHANGELOG.md
sed -i 's/^0\.9\.12$/0.9.13/' VERSION
sed -i 's/"0\.9\.12"/"0.9.13"/' quill/quill_version.py
sed -i 's/^version = 0\.9\.12$/version = 0.9.13/' setup.cfg
sed -i '1i ## 0.9.13\n' CHANGELOG.md
python3 build_quill.py > build.log
cat build.log
cat dist/manifest.txt
