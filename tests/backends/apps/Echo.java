// A servlet that answers with the path it routes on: getServletPath() + getPathInfo(), as the
// container decoded and normalized it, in UTF-8.  Mapped to "/*" by tests/harness (Tomcat 10:
// jakarta.servlet; Jetty 9 gets the same source with javax.servlet).
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

public class Echo extends HttpServlet {
    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String info = req.getPathInfo();
        byte[] body = (req.getServletPath() + (info == null ? "" : info))
                .getBytes(StandardCharsets.UTF_8);
        resp.setStatus(200);
        resp.setContentType("application/octet-stream");
        resp.setContentLength(body.length);
        resp.getOutputStream().write(body);
    }
}
