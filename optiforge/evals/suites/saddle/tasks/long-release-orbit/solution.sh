# Reference solution of long-release-orbit: one shell command a line, run from the work dir.
cat NOTES.txt
cat VERSION
cat orbit/orbit_version.py
cat setup.cfg
head -n 3 CHANGELOG.md
sed -i 's/^2\.7\.4$/2.7.5/' VERSION
sed -i 's/"2\.7\.4"/"2.7.5"/' orbit/orbit_version.py
sed -i 's/^version = 2\.7\.4$/version = 2.7.5/' setup.cfg
sed -i '1i ## 2.7.5\n' CHANGELOG.md
python3 build_orbit.py > build.log
cat build.log
cat dist/manifest.txt
