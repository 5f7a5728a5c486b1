# Reference solution of write-wordfreq-script: one shell command a line, run from the work dir.
head -n 5 poem.txt
printf '%s\n' 'import re' 'import sys' 'from collections import Counter' '' 'words = re.findall("[a-z]+", open(sys.argv[1]).read().lower())' 'ranked = sorted(Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))' 'for word, count in ranked[: int(sys.argv[2])]:' '    print(f"{word}\t{count}")' > wordfreq.py
python3 wordfreq.py poem.txt 5 > top5.txt
cat top5.txt
