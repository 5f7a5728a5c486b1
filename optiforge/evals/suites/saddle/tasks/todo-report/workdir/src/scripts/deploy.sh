#!/bin/sh
set -e
# TODO(hank): add rollback
rsync -a build/ host:/srv/
echo done
# TODO(alice): notify
