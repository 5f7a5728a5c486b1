# Reference solution of long-ports-alpha: one shell command a line, run from the work dir.
cat inventory.txt
ls deploy
cat deploy/api.env
cat gateway.tmpl
sed -i 's/^PORT=0$/PORT=8081/' deploy/api.env
sed -i 's/^PORT=0$/PORT=8090/' deploy/web.env
sed -i 's/^PORT=0$/PORT=9443/' deploy/auth.env
sed -i 's/^PORT=0$/PORT=9102/' deploy/metrics.env
python3 render_alpha.py
cat gateway.conf
python3 check_alpha.py > check.txt
cat check.txt
