package spice;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * SPICE in a servlet container (spi `servlet`, and `jsp`, whose page calls
 * {@link #handle}): the same work and the same bytes as the C programs and
 * spice.py (docs/spice.md). The container maps /spice/servlet/* (or
 * /spice/jsp/*) here, so the path info is "/<kind>/<file path>".
 * SPICE_ROOT and SPICE_SESSION_LOG come from the container's environment.
 *
 * <p>The session log's lock: Java has no flock(2) (FileChannel.lock takes a
 * POSIX record lock, which does not exclude flock on Linux), so one
 * JVM-wide lock serialises this container's session requests; the lab runs
 * one container per server. Session requests of another SPI on the same
 * log at the same moment are not excluded (docs/spice.md says so).
 */
public final class Spice {
    private Spice() {}

    static final int SLEEP_DEFAULT_MS = 3000;
    static final int SLEEP_MAX_MS = 600000;
    static final int COUNTER_DIGITS = 12;
    static final ReentrantLock LOG_LOCK = new ReentrantLock();
    static final DateTimeFormatter STAMP =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss'Z'").withZone(ZoneOffset.UTC);
    static final Map<String, String> TYPES = Map.ofEntries(
            Map.entry("html", "text/html"), Map.entry("htm", "text/html"),
            Map.entry("txt", "text/plain"), Map.entry("css", "text/css"),
            Map.entry("js", "application/javascript"), Map.entry("json", "application/json"),
            Map.entry("xml", "application/xml"), Map.entry("png", "image/png"),
            Map.entry("jpg", "image/jpeg"), Map.entry("jpeg", "image/jpeg"),
            Map.entry("gif", "image/gif"), Map.entry("svg", "image/svg+xml"));

    static final class Fail extends Exception {
        final int status;
        Fail(int status, String why) {
            super(why);
            this.status = status;
        }
    }

    static String reason(int status) {
        switch (status) {
            case 200: return "OK";
            case 400: return "Bad Request";
            case 404: return "Not Found";
            case 405: return "Method Not Allowed";
            default: return "Internal Server Error";
        }
    }

    static String contentType(String path) {
        String name = path.substring(path.lastIndexOf('/') + 1);
        int dot = name.lastIndexOf('.');
        if (dot < 0) {
            return "application/octet-stream";
        }
        return TYPES.getOrDefault(name.substring(dot + 1).toLowerCase(), "application/octet-stream");
    }

    static boolean pathOk(String p) {
        if (!p.startsWith("/") || p.equals("/")) {
            return false;
        }
        for (int i = 0; i < p.length(); i++) {
            char c = p.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                return false;
            }
        }
        for (String seg : p.substring(1).split("/", -1)) {
            if (seg.equals(".") || seg.equals("..")) {
                return false;
            }
        }
        return true;
    }

    static int fnv1a(int h, byte[] data) {
        for (byte b : data) {
            h ^= (b & 0xff);
            h *= 16777619;
        }
        return h;
    }

    /** The "ad" chosen from the request, the same number as C's. */
    static long adId(String query, String cookie, String userAgent) {
        byte[] nl = {'\n'};
        int h = 0x811c9dc5;
        h = fnv1a(h, bytes(query));
        h = fnv1a(h, nl);
        h = fnv1a(h, bytes(cookie));
        h = fnv1a(h, nl);
        h = fnv1a(h, bytes(userAgent));
        return Integer.toUnsignedLong(h) % 100;
    }

    /** A header's or query's bytes as they came (the container decodes them as ISO-8859-1). */
    static byte[] bytes(String s) {
        return s == null ? new byte[0] : s.getBytes(StandardCharsets.ISO_8859_1);
    }

    static int sleepMs(String qs) throws Fail {
        if (qs != null) {
            for (String part : qs.split("&", -1)) {
                if (part.startsWith("ms=")) {
                    String v = part.substring(3);
                    if (v.isEmpty() || v.length() > 6 || !v.chars().allMatch(c -> c >= '0' && c <= '9')
                            || Integer.parseInt(v) > SLEEP_MAX_MS) {
                        throw new Fail(400, "ms must be a whole number of milliseconds, at most 600000");
                    }
                    return Integer.parseInt(v);
                }
            }
        }
        return SLEEP_DEFAULT_MS;
    }

    static String config(String name) throws Fail {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            throw new Fail(500, name + " is not set");
        }
        return v;
    }

    /** Seed 002: lock, increment the counter in place, append a line, unlock. */
    static void sessionLog(String file) throws Fail {
        Path log = Paths.get(config("SPICE_SESSION_LOG"));
        LOG_LOCK.lock();
        try (FileChannel ch = FileChannel.open(log, StandardOpenOption.READ, StandardOpenOption.WRITE,
                StandardOpenOption.CREATE)) {
            ByteBuffer head = ByteBuffer.allocate(COUNTER_DIGITS + 1);
            while (head.hasRemaining() && ch.read(head, head.position()) > 0) {
                // read the counter line
            }
            long count = 0;
            if (head.position() > 0) {
                byte[] h = head.array();
                boolean ok = head.position() == COUNTER_DIGITS + 1 && h[COUNTER_DIGITS] == '\n';
                for (int i = 0; ok && i < COUNTER_DIGITS; i++) {
                    ok = h[i] >= '0' && h[i] <= '9';
                }
                if (!ok) {
                    throw new Fail(500, "SPICE_SESSION_LOG does not start with a counter line");
                }
                count = Long.parseLong(new String(h, 0, COUNTER_DIGITS, StandardCharsets.US_ASCII));
            }
            count++;
            if (count > 999999999999L) {
                throw new Fail(500, "session counter overflow");
            }
            ByteBuffer c = ByteBuffer.wrap(String.format("%012d\n", count).getBytes(StandardCharsets.US_ASCII));
            while (c.hasRemaining()) {
                ch.write(c, c.position());
            }
            String line = STAMP.format(Instant.now()) + "\t" + ProcessHandle.current().pid() + "\t" + file + "\n";
            ByteBuffer l = ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8));
            long end = ch.size();
            while (l.hasRemaining()) {
                end += ch.write(l, end);
            }
        } catch (IOException e) {
            throw new Fail(500, "cannot open, lock or write SPICE_SESSION_LOG");
        } finally {
            LOG_LOCK.unlock();
        }
    }

    /** Answers one request; never throws for a bad request (4xx/5xx instead). */
    public static void handle(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String method = req.getMethod();
        boolean head = "HEAD".equals(method);
        try {
            if (!"GET".equals(method) && !head) {
                resp.setHeader("Allow", "GET, HEAD");
                throw new Fail(405, "only GET and HEAD");
            }
            String pi = req.getPathInfo();
            String usage = "expected /spice/<spi>/{adrot,session,sleep}/<file path>";
            if (pi == null || !pi.startsWith("/")) {
                throw new Fail(404, usage);
            }
            int slash = pi.indexOf('/', 1);
            String kind = slash < 0 ? pi.substring(1) : pi.substring(1, slash);
            if (!kind.equals("adrot") && !kind.equals("session") && !kind.equals("sleep")) {
                throw new Fail(404, usage);
            }
            if (slash < 0 || slash == pi.length() - 1) {
                throw new Fail(404, "no file path");
            }
            String file = pi.substring(slash);
            if (!pathOk(file)) {
                throw new Fail(400, "bad file path");
            }
            String root = config("SPICE_ROOT");
            if (kind.equals("sleep")) {
                try {
                    Thread.sleep(sleepMs(req.getQueryString()));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new Fail(500, "interrupted");
                }
            }
            Path p = Paths.get(root + file);
            byte[] body;
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
                if (!Files.readAttributes(p, BasicFileAttributes.class).isRegularFile()) {
                    throw new Fail(404, "no such file");
                }
                if (kind.equals("session")) {
                    sessionLog(file);
                }
                long size = ch.size();
                if (size > Integer.MAX_VALUE - 16) {
                    throw new Fail(500, "file too large");
                }
                ByteBuffer buf = ByteBuffer.allocate((int) size);
                while (buf.hasRemaining() && ch.read(buf) > 0) {
                    // read it all
                }
                if (buf.hasRemaining()) {
                    throw new Fail(500, "the file changed while it was read");
                }
                body = buf.array();
            } catch (NoSuchFileException e) {
                throw new Fail(404, "no such file");
            } catch (IOException e) {
                throw new Fail(404, "no such file");
            }
            resp.setStatus(200);
            resp.setContentType(contentType(file));
            resp.setContentLengthLong(body.length);
            if (kind.equals("adrot")) {
                resp.setHeader("X-Ad", Long.toString(adId(req.getQueryString(), req.getHeader("Cookie"),
                        req.getHeader("User-Agent"))));
            }
            if (!head) {
                OutputStream out = resp.getOutputStream();
                out.write(body);
            }
        } catch (Fail f) {
            if (f.status >= 500) {
                System.err.println("spice servlet: " + f.getMessage());
            }
            byte[] body = (f.status + " " + reason(f.status) + ": " + f.getMessage() + "\n")
                    .getBytes(StandardCharsets.UTF_8);
            resp.setStatus(f.status);
            resp.setContentType("text/plain");
            resp.setContentLengthLong(body.length);
            if (!head) {
                resp.getOutputStream().write(body);
            }
        }
    }
}
