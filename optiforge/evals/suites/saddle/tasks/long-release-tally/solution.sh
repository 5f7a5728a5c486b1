# Reference solution of long-release-tally: one shell command a line, run from the work dir.
cat NOTES.txt
cat VERSION
cat tally/tally_version.py
cat setup.cfg
head -n 3 CHANGELOG.md
sed -i 's/^5\.1\.0$/5.1.1/' VERSION
sed -i 's/"5\.1\.0"/"5.1.1"/' tally/tally_version.py
sed -i 's/^version = 5\.1\.0$/version = 5.1.1/' setup.cfg
sed -i '1i ## 5.1.1\n' CHANGELOG.md
python3 build_tally.py > build.log
cat build.log
cat dist/manifest.txt
