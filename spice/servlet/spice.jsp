<%@ page session="false" trimDirectiveWhitespaces="true" import="spice.Spice" %><%
// The `jsp` SPI: a JSP page, compiled by the container's JSP engine, doing
// the servlet's work. No template text (and no newline at the end): the
// body is exactly the file's bytes.
Spice.handle(request, response);
%>