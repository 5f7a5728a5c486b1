# Reference solution of normalize-names: one shell command a line, run from the work dir.
cat -A names.txt | head -n 20
python3 -c 'names = {" ".join(w[:1].upper() + w[1:].lower() for w in line.split()) for line in open("names.txt") if line.strip()}; open("clean_names.txt", "w").write("\n".join(sorted(names)) + "\n")'
