"""What runs around the engine (``throttled_admin._engine``): the scheduler's thread (``scheduler``), futures
(``futures``), the threads that run the application's code (``user_code``), the client's settings and its
librdkafka callbacks (``settings``), and the librdkafka adapters that tell connection failures apart
(``librdkafka_log``, ``handshake_drops``, ``sasl_probe``)."""
