# Reference solution of long-ports-carina: one shell command a line, run from the work dir.
cat inventory.txt
ls deploy
cat deploy/api.env
cat gateway.tmpl
sed -i 's/^PORT=0$/PORT=5050/' deploy/api.env
sed -i 's/^PORT=0$/PORT=5080/' deploy/web.env
sed -i 's/^PORT=0$/PORT=5443/' deploy/auth.env
sed -i 's/^PORT=0$/PORT=5909/' deploy/metrics.env
python3 render_carina.py
cat gateway.conf
python3 check_carina.py > check.txt
cat check.txt
