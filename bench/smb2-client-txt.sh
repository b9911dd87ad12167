#!/usr/bin/env bash
# The whole of dbench's client.txt (458,344 operations) replayed once by
# benchlab's own SMB2 client against an unprivileged smbd, every operation
# checked against Samba's full_audit log and `smbstatus -P` — the test
# crates/cli/tests/smb2_audit.rs::the_whole_client_txt_replays_equal_to_full_audit,
# ignored in CI for its length (about 4 minutes on 2 busy cores, debug build).
#
#   bash bench/smb2-client-txt.sh [--release]
#
# Needs the packages samba, samba-vfs-modules and dbench (scripts/test.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
cargo test "$@" -p benchlab --test smb2_audit -- --ignored --exact the_whole_client_txt_replays_equal_to_full_audit
echo "the whole client.txt: passed in $(( $(date +%s) - start )) s"
