"""The client's metrics: the windowed sensor (``sensor``) and their recording and OpenTelemetry export
(``metrics``)."""
