#!/bin/sh
# Hidden test of write-wordfreq-script: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

import os
import tempfile

TOP5 = ['sky\t14', 'wind\t14', 'and\t11', 'blue\t11', 'don\t11']
HIDDEN = [("star-- ASH! and! Night; stone wind-- wind! SEA River; \n O'er, Night ash! Don't. O'er fire! grey-blue. 2024-- grey-blue \n wind. night AND fire sky, night O'er grey-blue don't. \n grey-blue; Light Fire! star. wind! And! the; wind light \n fire! O'ER THE ash, ASH, sky and, a; a. \n light, stone; grey-blue; Ash River O'er fire wind. a \n wind! river-- and, ash, Sea; wind a; Wind. light \n star, O'er the, ash, river; wind, A-- a, river! \n river 2024! and! light-- Don't. Sky. ash O'er,\n", 3, ['wind\t10', 'ash\t8', 'er\t7']), ("Cat cat CAT dog, dog; bird.\nfish's eggs 42x\n", 10, ['cat\t3', 'dog\t2', 'bird\t1', 'eggs\t1', 'fish\t1', 's\t1', 'x\t1']), ("wind, Sea; Ash; river! grey-blue, Sea a. light! and! \n and! star! Star Ash-- O'er; Ash SEA; and; sky \n a. Grey-blue Star. sky-- A. wind WIND; O'er, ash! \n ash! A. stone river RIVER O'er. WIND, stone; star \n WIND fire; River WIND. ash sky; GREY-BLUE sky Sea. \n 2024 The the. 2024 river;\n", 1, ['ash\t6']), ("and Don't; river. grey-blue-- and; stone 2024 stone a \n a. star a river star a-- river-- a AND, \n the, Wind! sky. Light, Grey-blue-- a-- ash; Star-- the. \n ash night, a. fire-- and; Sky; stone A ash \n O'er light-- fire 2024-- fire, sky; a ash-- night-- \n grey-blue-- O'er, stone ash, Sea-- light! stone light; Fire; \n ASH, Grey-blue; and; The! Ash fire STONE And, Grey-blue! \n fire A-- O'er, 2024, FIRE; a wind. LIGHT; sky \n and, stone; NIGHT-- O'er grey-blue! night O'ER-- LIGHT. sky. \n Sky, Night wind! star-- A FIRE O'er RIVER-- Sky, \n a. star-- Sea. ash! star; O'er. a-- night! a-- \n the a, fire, A stone-- O'ER wind! the 2024! \n 2024; sky. and Sea, Light river ash-- the, GREY-BLUE, \n grey-blue. ash; GREY-BLUE,\n", 7, ['a\t17', 'ash\t10', 'blue\t9', 'fire\t9', 'grey\t9', 'and\t8', 'er\t8'])]


def check():
    if lines("top5.txt") != TOP5:
        return False
    folder = tempfile.mkdtemp()
    for i, (text, n, want) in enumerate(HIDDEN):
        path = os.path.join(folder, f"text{i}.txt")
        with open(path, "w") as f:
            f.write(text)
        res = run(["python3", "wordfreq.py", path, str(n)])
        if res is None or res[0] != 0:
            return False
        got = [line.rstrip() for line in res[1].replace("\r\n", "\n").split("\n")]
        while got and not got[-1]:
            got.pop()
        if got != want:
            return False
    return True

verdict(check)
PY
