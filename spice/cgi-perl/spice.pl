#!/usr/bin/perl
# SPICE as a Perl CGI script (spi `cgi-perl`): the same work as the C
# programs (../src/spice.c) and spice.py, in the language c't 1999's CGI
# tests used. Plain Perl with only Fcntl (no CGI.pm): a CGI SPI's cost is
# the process and interpreter start, and a module loaded per request would
# measure the module instead.
#
# URL layout (docs/spice.md, "URL layout"): the server maps /spice/cgi-perl
# to this script, so PATH_INFO is "/<kind>/<file path>" with kind adrot,
# session or sleep (?ms=N, default 3000). SPICE_ROOT is the document root,
# SPICE_SESSION_LOG the session log. The body is exactly the file's bytes;
# every response is byte-identical to cgi-c's for the same request.
use strict;
use warnings;
use Fcntl qw(O_RDONLY O_RDWR O_CREAT O_APPEND F_SETFL LOCK_EX LOCK_UN SEEK_SET);

my $SLEEP_DEFAULT_MS = 3000;
my $SLEEP_MAX_MS     = 600000;
my $COUNTER_DIGITS   = 12;
my $COUNTER_LINE     = $COUNTER_DIGITS + 1;

my %TYPES = (
    html => 'text/html',
    htm  => 'text/html',
    txt  => 'text/plain',
    css  => 'text/css',
    js   => 'application/javascript',
    json => 'application/json',
    xml  => 'application/xml',
    png  => 'image/png',
    jpg  => 'image/jpeg',
    jpeg => 'image/jpeg',
    gif  => 'image/gif',
    svg  => 'image/svg+xml',
);
my %REASONS = (
    200 => 'OK',
    400 => 'Bad Request',
    404 => 'Not Found',
    405 => 'Method Not Allowed',
    500 => 'Internal Server Error',
);
my $USAGE = 'expected /spice/<spi>/{adrot,session,sleep}/<file path>';

binmode STDOUT;

sub out {
    my ($data) = @_;
    my $off = 0;
    while ($off < length $data) {
        my $n = syswrite STDOUT, $data, length($data) - $off, $off;
        exit 1 unless defined $n;
        $off += $n;
    }
}

# Ends the request with an error response (and a line on stderr, which
# lands in the server's error log, for a 5xx).
sub fail {
    my ($status, $why) = @_;
    print STDERR "spice.pl[$$]: $why\n" if $status >= 500;
    my $body  = "$status $REASONS{$status}: $why\n";
    my $allow = $status == 405 ? "Allow: GET, HEAD\r\n" : '';
    out("Status: $status $REASONS{$status}\r\nContent-Type: text/plain\r\nContent-Length: "
          . length($body)
          . "\r\n$allow\r\n$body");
    exit 0;
}

sub content_type {
    my ($path) = @_;
    my ($name) = $path =~ m{([^/]*)\z};
    return 'application/octet-stream' unless $name =~ /\.([^.]*)\z/;
    return $TYPES{ lc $1 } // 'application/octet-stream';
}

# Starts with '/', names something below the root, no "." or ".." segment,
# no control character (which would tear a session log line).
sub path_ok {
    my ($p) = @_;
    return 0 if $p !~ m{\A/} || $p eq '/';
    return 0 if $p =~ /[\x00-\x1f\x7f]/;
    for my $seg (split m{/}, substr($p, 1), -1) {
        return 0 if $seg eq '.' || $seg eq '..';
    }
    return 1;
}

# FNV-1a, 32 bits, over the bytes of QUERY_STRING \n HTTP_COOKIE \n
# HTTP_USER_AGENT, modulo 100: the same "ad" as every other SPI.
sub ad_id {
    my $h = 2166136261;
    my $s = join "\n", map { $ENV{$_} // '' } qw(QUERY_STRING HTTP_COOKIE HTTP_USER_AGENT);
    for my $b (unpack 'C*', $s) {
        $h = (($h ^ $b) * 16777619) & 0xFFFFFFFF;
    }
    return $h % 100;
}

sub sleep_ms {
    my ($qs) = @_;
    for my $part (split /&/, $qs, -1) {
        next unless substr($part, 0, 3) eq 'ms=';
        my $v = substr $part, 3;
        fail(400, 'ms must be a whole number of milliseconds, at most 600000')
          if $v !~ /\A[0-9]+\z/ || $v > $SLEEP_MAX_MS;
        return $v + 0;
    }
    return $SLEEP_DEFAULT_MS;
}

# Seed 002's session-oriented request: open the log, lock it (flock, as
# the C and Python programs do: one lock for every SPI on the server),
# increment the counter in place, append a line with time, process id and
# file, unlock.
sub session_log {
    my ($log, $file) = @_;
    # Without O_APPEND: the counter is rewritten at offset 0 first.
    sysopen my $fh, $log, O_RDWR | O_CREAT, 0666 or fail(500, 'cannot open SPICE_SESSION_LOG');
    binmode $fh;
    flock $fh, LOCK_EX or fail(500, 'cannot lock SPICE_SESSION_LOG');
    my $err = eval {
        my $head = '';
        my $n    = sysread $fh, $head, $COUNTER_LINE;
        return 'cannot read SPICE_SESSION_LOG' unless defined $n;
        my $count = 0;
        if ($n > 0) {
            return 'SPICE_SESSION_LOG does not start with a counter line'
              unless $head =~ /\A[0-9]{12}\n\z/;
            $count = substr($head, 0, $COUNTER_DIGITS) + 0;
        }
        $count++;
        return 'session counter overflow' if $count > 999999999999;
        sysseek $fh, 0, SEEK_SET or return 'cannot write the counter of SPICE_SESSION_LOG';
        my $w = syswrite $fh, sprintf("%012d\n", $count);
        return 'cannot write the counter of SPICE_SESSION_LOG' unless defined $w && $w == $COUNTER_LINE;
        my @t    = gmtime time;
        my $line = sprintf "%04d-%02d-%02dT%02d:%02d:%02dZ\t%d\t%s\n", $t[5] + 1900, $t[4] + 1, @t[3, 2, 1, 0],
          $$, $file;
        fcntl $fh, F_SETFL, O_APPEND or return 'cannot append to SPICE_SESSION_LOG';
        my $off = 0;
        while ($off < length $line) {
            my $m = syswrite $fh, $line, length($line) - $off, $off;
            return 'cannot append to SPICE_SESSION_LOG' unless defined $m;
            $off += $m;
        }
        return undef;
    };
    flock $fh, LOCK_UN;
    close $fh;
    fail(500, $err) if defined $err;
}

my $method = $ENV{REQUEST_METHOD} // '';
$method = 'GET' if $method eq '';
fail(405, 'only GET and HEAD') if $method ne 'GET' && $method ne 'HEAD';

my $pi = $ENV{PATH_INFO} // '';
fail(404, $USAGE) unless substr($pi, 0, 1) eq '/';
my ($kind, $rest) = split m{/}, substr($pi, 1), 2;
fail(404, $USAGE) unless $kind eq 'adrot' || $kind eq 'session' || $kind eq 'sleep';
fail(404, 'no file path') if !defined $rest || $rest eq '';
my $file = "/$rest";
fail(400, 'bad file path') unless path_ok($file);
my $root = $ENV{SPICE_ROOT} // '';
fail(500, 'SPICE_ROOT is not set') if $root eq '';

if ($kind eq 'sleep') {
    my $ms = sleep_ms($ENV{QUERY_STRING} // '');
    # select's timeout: a sub-second sleep without loading Time::HiRes.
    select undef, undef, undef, $ms / 1000 if $ms > 0;
}

sysopen my $fh, $root . $file, O_RDONLY or fail(404, 'no such file');
binmode $fh;
fail(404, 'no such file') unless -f $fh;
my $size = -s _;

if ($kind eq 'session') {
    my $log = $ENV{SPICE_SESSION_LOG} // '';
    fail(500, 'SPICE_SESSION_LOG is not set') if $log eq '';
    session_log($log, $file);
}

my $body = '';
if ($method ne 'HEAD') {
    my $got = 0;
    while ($got < $size) {
        my $n = sysread $fh, $body, $size - $got, $got;
        last unless $n;
        $got += $n;
    }
    fail(500, 'the file changed while it was read') if $got != $size;
}
close $fh;

my $ad = $kind eq 'adrot' ? 'X-Ad: ' . ad_id() . "\r\n" : '';
out('Status: 200 OK'
      . "\r\nContent-Type: "
      . content_type($file)
      . "\r\nContent-Length: $size\r\n$ad\r\n"
      . $body);
