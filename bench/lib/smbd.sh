# bench/lib/smbd.sh: an unprivileged smbd for the SMB bench scripts, sourced.
#
#   smbd_start DIR guest|user   a share [bench] at DIR/share, smbd's state
#                               under DIR, a free loopback port; returns
#                               once smbd listens. Sets S (= DIR), PORT,
#                               SMBD_PID. `guest`: every connection is the
#                               guest; `user`: log-ins, with a password set
#                               by smbd_user.
#   smbd_user PASSWORD          adds the running user to smbd's passdb.
#   smbd_stop                   stops smbd and its per-connection children
#                               (it leads a process group of its own); for
#                               the caller's EXIT trap, safe to call twice.
#
# Samba's defaults otherwise (4.17: SMB2_02 at the least, log level 0).

SMBD_PID=

smbd_start() {
  S=$1
  local guest=
  case $2 in
    guest) guest=$' guest ok = yes\n guest only = yes' ;;
    user) ;;
    *) echo "smbd_start: expected guest or user, got '$2'" >&2; return 2 ;;
  esac
  mkdir -p "$S"/{share,state,lock,cache,log,private,pid,ncalrpc}
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local me
  me=$(id -un)
  cat > "$S/smb.conf" <<CONF
[global]
 netbios name = BENCHLAB
 server role = standalone server
 smb ports = $PORT
 interfaces = 127.0.0.1
 bind interfaces only = yes
 disable netbios = yes
 state directory = $S/state
 lock directory = $S/lock
 cache directory = $S/cache
 private dir = $S/private
 pid directory = $S/pid
 ncalrpc dir = $S/ncalrpc
 log file = $S/log/log.%m
 log level = 0
 passdb backend = tdbsam:$S/private/passdb.tdb
 map to guest = Bad User
 guest account = $me
 server min protocol = SMB2_02
 load printers = no
 printing = bsd
 printcap name = /dev/null
 disable spoolss = yes
[bench]
 path = $S/share
 read only = no
$guest
 force user = $me
CONF
  setsid /usr/sbin/smbd -F --no-process-group -s "$S/smb.conf" > "$S/smbd.out" 2>&1 &
  SMBD_PID=$!
  local _
  for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "smbd did not listen on 127.0.0.1:$PORT within 10 s:" >&2
  tail -20 "$S/smbd.out" >&2
  return 1
}

smbd_user() {
  printf '%s\n%s\n' "$1" "$1" | smbpasswd -c "$S/smb.conf" -s -a "$(id -un)" > /dev/null
}

smbd_stop() {
  if [ -n "$SMBD_PID" ]; then
    kill -TERM -- "-$SMBD_PID" 2>/dev/null || true
    wait "$SMBD_PID" 2>/dev/null || true
    SMBD_PID=
  fi
}
