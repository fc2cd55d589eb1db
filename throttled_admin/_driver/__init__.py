"""What runs around the engine (``throttled_admin._engine``): each client's scheduler (``scheduler``) and the one
thread that serves them all (``driver_loop``), futures
(``futures``) and where each settlement finds its own (``open_calls``), the threads that run the application's code
(``user_code``), the client's settings and its librdkafka callbacks (``settings``), the librdkafka adapters that tell
connection failures apart (``librdkafka_log``, ``handshake_drops``, ``sasl_probe``), a metadata read that fails as
fast as mutations on a wrong password or an unreachable cluster (``metadata_read``, for the command line and
provisioning), and ``wait_for_metadata``'s reader of every broker's Metadata (``broker_views``: connections of its
own with the application's TLS and SASL settings, ``broker_connection``, ``sasl_client``, ``metadata_wire``,
``wire_codec``; its fallback through librdkafka, ``librdkafka_views``)."""
