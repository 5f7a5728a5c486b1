#!/bin/sh
# Hidden test of photos-by-date: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = {'photos/2021/03/IMG_20210304_123000.jpg': 'b9deb344e8f3e7535c9a09aad3ad31c72ed423fd6d116d', 'photos/2019/12/IMG_20191231_235959.jpg': 'dbdaa542da00265bdf38babb28b72519a69b73a6af77ff62a230e2e50c', 'photos/2021/03/VID_20210315_080000.mp4': '1c18e956001d99ac0c22da0c47b777e3460292a3ef', 'photos/2023/01/PXL_20230101_000001.jpg': 'ebc07fd52c5dd2d6b6256db6c74fa5ad0b1005770e2065fd1bec633823de0733f91093a2dcf2ce73c4794f5c65', 'photos/2021/03/IMG_20210322_101010.heic': '18c98bff0c241394d3ecbee2b490cc772cb11df526e9107a342145eaa2ce4313652efe7660a168', 'photos/2019/11/DSC_20191103_170405.JPG': '9530e413d3b5ce7622a6b0f1f115a23df6d8135d7fcff3ddfee97e89669895c62a', 'inbox/Screenshot 2022-05-06 at 10.00.00.png': 'ab0683c08b4b856a450606a452acd3b96ec0bea763287646c1ed81e7225097ee092cf7ed45fadb95f0519f224e6d0a9ac16b079e5514177b6814ff92', 'inbox/notes.txt': '771ba322931ef9aaeb4be24ecc0fc374a65cef6bc0446596b8d41b7c0609e899160ccf085e3b62f4', 'inbox/IMG_2021.jpg': '299d1686a8c87305deb882b589da8becb47607ed830d1ffb5d85e018a64ea1d9566c5f60f463f69c35b3a8f82425d8f368220d', 'inbox/img_20200101_120000.jpg': '73bf17459865e02cab55fe7fe2cebace2f3e7a9ae4a5e8abe631e411f8e6e80b87b473b0c909', 'inbox/IMG_20220230_99.jpg': '0d6f6c5858a7a012ccabb1574b9c050573d04c05135ce7224f3c34', 'photos/2023/08/PANO_20230815_064500.jpg': 'b0163376ec0cbcdffa51242245f6930d3700cd600247da3d7531386c150c6c60bfa0f201fa8da698f39c05635d73b92f'}


def check():
    got = {rel: data.hex() for rel, data in files().items()
           if rel.startswith(("inbox/", "photos/"))}
    return got == EXPECTED

verdict(check)
PY
