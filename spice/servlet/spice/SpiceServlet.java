package spice;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/** The `servlet` SPI: every method goes to {@link Spice#handle} (405 for all but GET and HEAD). */
public final class SpiceServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        Spice.handle(req, resp);
    }
}
