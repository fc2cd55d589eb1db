"""Apache Kafka 4.0's broker config set (``KafkaConfig.configDef``) as data: every config a broker describes for a
BROKER resource, with its type, its default (as ``ConfigDef.convertToString`` renders it; None: no default),
whether it is read-only (Kafka's "Update Mode: read-only"; per-broker and cluster-wide configs can be changed
dynamically) and its documentation.

Transcribed from Kafka 4.0's generated broker config documentation (kafka-site ``40/generated/kafka_config.html``):
names, types, defaults and update modes as 4.0 lists them; the documentation text is 3.9's generated text for
configs 4.0 kept, 4.0's for the ones it added. The configs QuotaBroker acts on or validates are refined, with
their validators, in ``_configs_broker.py``.
"""

from __future__ import annotations

from throttled_admin._kafka.config_schema import ConfigKey, ConfigType

__all__ = ["KAFKA_40_BROKER_CONFIGS"]

_T = ConfigType

# (name, type, default, read_only, documentation)
_ROWS: tuple[tuple[str, ConfigType, str | None, bool, str], ...] = (
    (
        "add.partitions.to.txn.retry.backoff.max.ms",
        _T.INT,
        "100",
        True,
        "The maximum allowed timeout for adding partitions to transactions on the server side. It only "
        "applies to the actual add partition operations, not the verification. It will not be effective if "
        "it is larger than request.timeout.ms",
    ),
    (
        "add.partitions.to.txn.retry.backoff.ms",
        _T.INT,
        "20",
        True,
        "The server-side retry backoff when the server attemptsto add the partition to the transaction",
    ),
    (
        "advertised.listeners",
        _T.STRING,
        None,
        False,
        "Listeners to publish to ZooKeeper for clients to use, if different than the <code>listeners</code> "
        "config property. In IaaS environments, this may need to be different from the interface to which "
        "the broker binds. If this is not set, the value for <code>listeners</code> will be used. Unlike "
        "<code>listeners</code>, it is not valid to advertise the 0.0.0.0 meta-address.<br> Also unlike "
        "<code>listeners</code>, there can be duplicated ports in this property, so that one listener can be "
        "configured to advertise another listener's address. This can be useful in some cases where external "
        "load balancers are used.",
    ),
    (
        "alter.config.policy.class.name",
        _T.CLASS,
        None,
        True,
        "The alter configs policy class that should be used for validation. The class should implement the "
        "<code>org.apache.kafka.server.policy.AlterConfigPolicy</code> interface.",
    ),
    (
        "alter.log.dirs.replication.quota.window.num",
        _T.INT,
        "11",
        True,
        "The number of samples to retain in memory for alter log dirs replication quotas",
    ),
    (
        "alter.log.dirs.replication.quota.window.size.seconds",
        _T.INT,
        "1",
        True,
        "The time span of each sample for alter log dirs replication quotas",
    ),
    (
        "authorizer.class.name",
        _T.STRING,
        "",
        True,
        "The fully qualified name of a class that implements "
        "<code>org.apache.kafka.server.authorizer.Authorizer</code> interface, which is used by the broker "
        "for authorization.",
    ),
    (
        "auto.create.topics.enable",
        _T.BOOLEAN,
        "true",
        True,
        "Enable auto creation of topic on the server.",
    ),
    (
        "auto.leader.rebalance.enable",
        _T.BOOLEAN,
        "true",
        True,
        "Enables auto leader balancing. A background thread checks the distribution of partition leaders at "
        "regular intervals, configurable by leader.imbalance.check.interval.seconds. If the leader imbalance "
        "exceeds leader.imbalance.per.broker.percentage, leader rebalance to the preferred leader for "
        "partitions is triggered.",
    ),
    (
        "background.threads",
        _T.INT,
        "10",
        False,
        "The number of threads to use for various background processing tasks",
    ),
    (
        "broker.heartbeat.interval.ms",
        _T.INT,
        "2000",
        True,
        "The length of time in milliseconds between broker heartbeats. Used when running in KRaft mode.",
    ),
    (
        "broker.id",
        _T.INT,
        "-1",
        True,
        "The broker id for this server. If unset, a unique broker id will be generated.To avoid conflicts "
        "between ZooKeeper generated broker id's and user configured broker id's, generated broker ids start "
        "from reserved.broker.max.id + 1.",
    ),
    (
        "broker.rack",
        _T.STRING,
        None,
        True,
        "Rack of the broker. This will be used in rack aware replication assignment for fault tolerance. "
        "Examples: <code>RACK1</code>, <code>us-east-1d</code>",
    ),
    (
        "broker.session.timeout.ms",
        _T.INT,
        "9000",
        True,
        "The length of time in milliseconds that a broker lease lasts if no heartbeats are made. Used when "
        "running in KRaft mode.",
    ),
    (
        "client.quota.callback.class",
        _T.CLASS,
        None,
        True,
        "The fully qualified name of a class that implements the ClientQuotaCallback interface, which is "
        "used to determine quota limits applied to client requests. By default, the <user> and <client-id> "
        "quotas that are stored in ZooKeeper are applied. For any given request, the most specific quota "
        "that matches the user principal of the session and the client-id of the request is applied.",
    ),
    (
        "compression.gzip.level",
        _T.INT,
        "-1",
        False,
        "The compression level to use if compression.type is set to 'gzip'.",
    ),
    (
        "compression.lz4.level",
        _T.INT,
        "9",
        False,
        "The compression level to use if compression.type is set to 'lz4'.",
    ),
    (
        "compression.type",
        _T.STRING,
        "producer",
        False,
        "Specify the final compression type for a given topic. This configuration accepts the standard "
        "compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which "
        "is equivalent to no compression; and 'producer' which means retain the original compression codec "
        "set by the producer.",
    ),
    (
        "compression.zstd.level",
        _T.INT,
        "3",
        False,
        "The compression level to use if compression.type is set to 'zstd'.",
    ),
    (
        "connection.failed.authentication.delay.ms",
        _T.INT,
        "100",
        True,
        "Connection close delay on failed authentication: this is the time (in milliseconds) by which "
        "connection close will be delayed on authentication failure. This must be configured to be less than "
        "connections.max.idle.ms to prevent connection timeout.",
    ),
    (
        "connections.max.idle.ms",
        _T.LONG,
        "600000",
        True,
        "Idle connections timeout: the server socket processor threads close the connections that idle more than this",
    ),
    (
        "connections.max.reauth.ms",
        _T.LONG,
        "0",
        True,
        "When explicitly set to a positive number (the default is 0, not a positive number), a session "
        "lifetime that will not exceed the configured value will be communicated to v2.2.0 or later clients "
        "when they authenticate. The broker will disconnect any such connection that is not re-authenticated "
        "within the session lifetime and that is then subsequently used for any purpose other than "
        "re-authentication. Configuration names can optionally be prefixed with listener prefix and SASL "
        "mechanism name in lower-case. For example, "
        "listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms=3600000",
    ),
    (
        "controlled.shutdown.enable",
        _T.BOOLEAN,
        "true",
        True,
        "Enable controlled shutdown of the server.",
    ),
    (
        "controller.listener.names",
        _T.STRING,
        None,
        True,
        "A comma-separated list of the names of the listeners used by the controller. This is required if "
        "running in KRaft mode. When communicating with the controller quorum, the broker will always use "
        "the first listener in this list.<br> Note: The ZooKeeper-based controller should not set this "
        "configuration.",
    ),
    (
        "controller.quorum.append.linger.ms",
        _T.INT,
        "25",
        True,
        "The duration in milliseconds that the leader will wait for writes to accumulate before flushing them to disk.",
    ),
    (
        "controller.quorum.bootstrap.servers",
        _T.LIST,
        "",
        True,
        "List of endpoints to use for bootstrapping the cluster metadata. The endpoints are specified in "
        "comma-separated list of <code>{host}:{port}</code> entries. For example: "
        "<code>localhost:9092,localhost:9093,localhost:9094</code>.",
    ),
    (
        "controller.quorum.election.backoff.max.ms",
        _T.INT,
        "1000",
        True,
        "Maximum time in milliseconds before starting new elections. This is used in the binary exponential "
        "backoff mechanism that helps prevent gridlocked elections",
    ),
    (
        "controller.quorum.election.timeout.ms",
        _T.INT,
        "1000",
        True,
        "Maximum time in milliseconds to wait without being able to fetch from the leader before triggering "
        "a new election",
    ),
    (
        "controller.quorum.fetch.timeout.ms",
        _T.INT,
        "2000",
        True,
        "Maximum time without a successful fetch from the current leader before becoming a candidate and "
        "triggering an election for voters; Maximum time a leader can go without receiving valid fetch or "
        "fetchSnapshot request from a majority of the quorum before resigning.",
    ),
    (
        "controller.quorum.request.timeout.ms",
        _T.INT,
        "2000",
        True,
        "The configuration controls the maximum amount of time the client will wait for the response of a "
        "request. If the response is not received before the timeout elapses the client will resend the "
        "request if necessary or fail the request if retries are exhausted.",
    ),
    (
        "controller.quorum.retry.backoff.ms",
        _T.INT,
        "20",
        True,
        "The amount of time to wait before attempting to retry a failed request to a given topic partition. "
        "This avoids repeatedly sending requests in a tight loop under some failure scenarios. This value is "
        "the initial backoff value and will increase exponentially for each failed request, up to the "
        "<code>retry.backoff.max.ms</code> value.",
    ),
    (
        "controller.quorum.voters",
        _T.LIST,
        "",
        True,
        "Map of id/endpoint information for the set of voters in a comma-separated list of "
        "<code>{id}@{host}:{port}</code> entries. For example: "
        "<code>1@localhost:9092,2@localhost:9093,3@localhost:9094</code>",
    ),
    (
        "controller.quota.window.num",
        _T.INT,
        "11",
        True,
        "The number of samples to retain in memory for controller mutation quotas",
    ),
    (
        "controller.quota.window.size.seconds",
        _T.INT,
        "1",
        True,
        "The time span of each sample for controller mutations quotas",
    ),
    (
        "controller.socket.timeout.ms",
        _T.INT,
        "30000",
        True,
        "The socket timeout for controller-to-broker channels.",
    ),
    (
        "create.topic.policy.class.name",
        _T.CLASS,
        None,
        True,
        "The create topic policy class that should be used for validation. The class should implement the "
        "<code>org.apache.kafka.server.policy.CreateTopicPolicy</code> interface.",
    ),
    (
        "default.replication.factor",
        _T.INT,
        "1",
        True,
        "The replication factor for automatically created topics, and for topics created with -1 as the "
        "replication factor",
    ),
    (
        "delegation.token.expiry.check.interval.ms",
        _T.LONG,
        "3600000",
        True,
        "Scan interval to remove expired delegation tokens.",
    ),
    (
        "delegation.token.expiry.time.ms",
        _T.LONG,
        "86400000",
        True,
        "The token validity time in milliseconds before the token needs to be renewed. Default value 1 day.",
    ),
    (
        "delegation.token.max.lifetime.ms",
        _T.LONG,
        "604800000",
        True,
        "The token has a maximum lifetime beyond which it cannot be renewed anymore. Default value 7 days.",
    ),
    (
        "delegation.token.secret.key",
        _T.PASSWORD,
        None,
        True,
        "Secret key to generate and verify delegation tokens. The same key must be configured across all the "
        "brokers.  If using Kafka with KRaft, the key must also be set across all controllers.  If the key "
        "is not set or set to empty string, brokers will disable the delegation token support.",
    ),
    (
        "delete.records.purgatory.purge.interval.requests",
        _T.INT,
        "1",
        True,
        "The purge interval (in number of requests) of the delete records request purgatory",
    ),
    (
        "delete.topic.enable",
        _T.BOOLEAN,
        "true",
        True,
        "Enables delete topic. Delete topic through the admin tool will have no effect if this config is turned off",
    ),
    (
        "early.start.listeners",
        _T.STRING,
        None,
        True,
        "A comma-separated list of listener names which may be started before the authorizer has finished "
        "initialization. This is useful when the authorizer is dependent on the cluster itself for "
        "bootstrapping, as is the case for the StandardAuthorizer (which stores ACLs in the metadata log.) "
        "By default, all listeners included in controller.listener.names will also be early start listeners. "
        "A listener should not appear in this list if it accepts external traffic.",
    ),
    (
        "fetch.max.bytes",
        _T.INT,
        "57671680",
        True,
        "The maximum number of bytes we will return for a fetch request. Must be at least 1024.",
    ),
    (
        "fetch.purgatory.purge.interval.requests",
        _T.INT,
        "1000",
        True,
        "The purge interval (in number of requests) of the fetch request purgatory",
    ),
    (
        "group.consumer.assignors",
        _T.LIST,
        "uniform,range",
        True,
        "The server side assignors as a list of full class names. The first one in the list is considered as "
        "the default assignor to be used in the case where the consumer does not specify an assignor.",
    ),
    (
        "group.consumer.heartbeat.interval.ms",
        _T.INT,
        "5000",
        True,
        "The heartbeat interval given to the members of a consumer group.",
    ),
    (
        "group.consumer.max.heartbeat.interval.ms",
        _T.INT,
        "15000",
        True,
        "The maximum heartbeat interval for registered consumers.",
    ),
    (
        "group.consumer.max.session.timeout.ms",
        _T.INT,
        "60000",
        True,
        "The maximum allowed session timeout for registered consumers.",
    ),
    (
        "group.consumer.max.size",
        _T.INT,
        "2147483647",
        True,
        "The maximum number of consumers that a single consumer group can accommodate. This value will only "
        "impact the new consumer coordinator. To configure the classic consumer coordinator check "
        "group.max.size instead.",
    ),
    (
        "group.consumer.migration.policy",
        _T.STRING,
        "bidirectional",
        True,
        "The config that enables converting the non-empty classic group using the consumer embedded protocol "
        "to the non-empty consumer group using the consumer group protocol and vice versa; conversions of "
        "empty groups in both directions are always enabled regardless of this policy. bidirectional: both "
        "upgrade from classic group to consumer group and downgrade from consumer group to classic group are "
        "enabled, upgrade: only upgrade from classic group to consumer group is enabled, downgrade: only "
        "downgrade from consumer group to classic group is enabled, disabled: neither upgrade nor downgrade "
        "is enabled.",
    ),
    (
        "group.consumer.min.heartbeat.interval.ms",
        _T.INT,
        "5000",
        True,
        "The minimum heartbeat interval for registered consumers.",
    ),
    (
        "group.consumer.min.session.timeout.ms",
        _T.INT,
        "45000",
        True,
        "The minimum allowed session timeout for registered consumers.",
    ),
    (
        "group.consumer.session.timeout.ms",
        _T.INT,
        "45000",
        True,
        "The timeout to detect client failures when using the consumer group protocol.",
    ),
    (
        "group.coordinator.append.linger.ms",
        _T.INT,
        "5",
        True,
        "The duration in milliseconds that the coordinator will wait for writes to accumulate before "
        "flushing them to disk. Transactional writes are not accumulated.",
    ),
    (
        "group.coordinator.rebalance.protocols",
        _T.LIST,
        "classic,consumer",
        True,
        "The list of enabled rebalance protocols. Supported protocols: consumer,classic,share,unknown. The "
        "consumer rebalance protocol is in early access and therefore must not be used in production.",
    ),
    (
        "group.coordinator.threads",
        _T.INT,
        "4",
        True,
        "The number of threads used by the group coordinator.",
    ),
    (
        "group.initial.rebalance.delay.ms",
        _T.INT,
        "3000",
        True,
        "The amount of time the group coordinator will wait for more consumers to join a new group before "
        "performing the first rebalance. A longer delay means potentially fewer rebalances, but increases "
        "the time until processing begins.",
    ),
    (
        "group.max.session.timeout.ms",
        _T.INT,
        "1800000",
        True,
        "The maximum allowed session timeout for registered consumers. Longer timeouts give consumers more "
        "time to process messages in between heartbeats at the cost of a longer time to detect failures.",
    ),
    (
        "group.max.size",
        _T.INT,
        "2147483647",
        True,
        "The maximum number of consumers that a single consumer group can accommodate.",
    ),
    (
        "group.min.session.timeout.ms",
        _T.INT,
        "6000",
        True,
        "The minimum allowed session timeout for registered consumers. Shorter timeouts result in quicker "
        "failure detection at the cost of more frequent consumer heartbeating, which can overwhelm broker "
        "resources.",
    ),
    (
        "group.share.delivery.count.limit",
        _T.INT,
        "5",
        True,
        "The maximum number of delivery attempts for a record delivered to a share group.",
    ),
    (
        "group.share.heartbeat.interval.ms",
        _T.INT,
        "5000",
        True,
        "The heartbeat interval given to the members of a share group.",
    ),
    (
        "group.share.max.groups",
        _T.SHORT,
        "10",
        True,
        "The maximum number of share groups.",
    ),
    (
        "group.share.max.heartbeat.interval.ms",
        _T.INT,
        "15000",
        True,
        "The maximum heartbeat interval for share group members.",
    ),
    (
        "group.share.max.record.lock.duration.ms",
        _T.INT,
        "60000",
        True,
        "The record acquisition lock maximum duration in milliseconds for share groups.",
    ),
    (
        "group.share.max.session.timeout.ms",
        _T.INT,
        "60000",
        True,
        "The maximum allowed session timeout for share group members.",
    ),
    (
        "group.share.max.size",
        _T.INT,
        "200",
        True,
        "The maximum number of members that a single share group can accommodate.",
    ),
    (
        "group.share.min.heartbeat.interval.ms",
        _T.INT,
        "5000",
        True,
        "The minimum heartbeat interval for share group members.",
    ),
    (
        "group.share.min.record.lock.duration.ms",
        _T.INT,
        "15000",
        True,
        "The record acquisition lock minimum duration in milliseconds for share groups.",
    ),
    (
        "group.share.min.session.timeout.ms",
        _T.INT,
        "45000",
        True,
        "The minimum allowed session timeout for share group members.",
    ),
    (
        "group.share.partition.max.record.locks",
        _T.INT,
        "200",
        True,
        "Share-group record lock limit per share-partition.",
    ),
    (
        "group.share.record.lock.duration.ms",
        _T.INT,
        "30000",
        True,
        "The record acquisition lock duration in milliseconds for share groups.",
    ),
    (
        "group.share.session.timeout.ms",
        _T.INT,
        "45000",
        True,
        "The timeout to detect client failures when using the share group protocol.",
    ),
    (
        "initial.broker.registration.timeout.ms",
        _T.INT,
        "60000",
        True,
        "When initially registering with the controller quorum, the number of milliseconds to wait before "
        "declaring failure and exiting the broker process.",
    ),
    (
        "inter.broker.listener.name",
        _T.STRING,
        None,
        True,
        "Name of listener used for communication between brokers. If this is unset, the listener name is "
        "defined by security.inter.broker.protocolIt is an error to set this and "
        "security.inter.broker.protocol properties at the same time.",
    ),
    (
        "kafka.metrics.polling.interval.secs",
        _T.INT,
        "10",
        True,
        "The metrics polling interval (in seconds) which can be used in kafka.metrics.reporters implementations.",
    ),
    (
        "kafka.metrics.reporters",
        _T.LIST,
        "",
        True,
        "A list of classes to use as Yammer metrics custom reporters. The reporters should implement "
        "<code>kafka.metrics.KafkaMetricsReporter</code> trait. If a client wants to expose JMX operations "
        "on a custom reporter, the custom reporter needs to additionally implement an MBean trait that "
        "extends <code>kafka.metrics.KafkaMetricsReporterMBean</code> trait so that the registered MBean is "
        "compliant with the standard MBean convention.",
    ),
    (
        "leader.imbalance.check.interval.seconds",
        _T.LONG,
        "300",
        True,
        "The frequency with which the partition rebalance check is triggered by the controller",
    ),
    (
        "listener.security.protocol.map",
        _T.STRING,
        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
        False,
        "Map between listener names and security protocols. This must be defined for the same security "
        "protocol to be usable in more than one port or IP. For example, internal and external traffic can "
        "be separated even if SSL is required for both. Concretely, the user could define listeners with "
        "names INTERNAL and EXTERNAL and this property as: <code>INTERNAL:SSL,EXTERNAL:SSL</code>. As shown, "
        "key and value are separated by a colon and map entries are separated by commas. Each listener name "
        "should only appear once in the map. Different security (SSL and SASL) settings can be configured "
        "for each listener by adding a normalised prefix (the listener name is lowercased) to the config "
        "name. For example, to set a different keystore for the INTERNAL listener, a config with name "
        "<code>listener.name.internal.ssl.keystore.location</code> would be set. If the config for the "
        "listener name is not set, the config will fallback to the generic config (i.e. "
        "<code>ssl.keystore.location</code>). Note that in KRaft a default mapping from the listener names "
        "defined by <code>controller.listener.names</code> to PLAINTEXT is assumed if no explicit mapping is "
        "provided and no other security protocol is in use.",
    ),
    (
        "listeners",
        _T.STRING,
        "PLAINTEXT://:9092",
        False,
        "Listener List - Comma-separated list of URIs we will listen on and the listener names. If the "
        "listener name is not a security protocol, <code>listener.security.protocol.map</code> must also be "
        "set.<br> Listener names and port numbers must be unique unless %n one listener is an IPv4 address "
        "and the other listener is %n an IPv6 address (for the same port).%n Specify hostname as 0.0.0.0 to "
        "bind to all interfaces.%n Leave hostname empty to bind to default interface.%n Examples of legal "
        "listener lists:%n <code>PLAINTEXT://myhost:9092,SSL://:9091</code>%n "
        "<code>CLIENT://0.0.0.0:9092,REPLICATION://localhost:9093</code>%n "
        "<code>PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092</code>%n",
    ),
    (
        "log.cleaner.backoff.ms",
        _T.LONG,
        "15000",
        False,
        "The amount of time to sleep when there are no logs to clean",
    ),
    (
        "log.cleaner.dedupe.buffer.size",
        _T.LONG,
        "134217728",
        False,
        "The total memory used for log deduplication across all cleaner threads",
    ),
    (
        "log.cleaner.delete.retention.ms",
        _T.LONG,
        "86400000",
        False,
        "The amount of time to retain tombstone message markers for log compacted topics. This setting also "
        "gives a bound on the time in which a consumer must complete a read if they begin from offset 0 to "
        "ensure that they get a valid snapshot of the final stage (otherwise  tombstones messages may be "
        "collected before a consumer completes their scan).",
    ),
    (
        "log.cleaner.enable",
        _T.BOOLEAN,
        "true",
        True,
        "Enable the log cleaner process to run on the server. Should be enabled if using any topics with a "
        "cleanup.policy=compact including the internal offsets topic. If disabled those topics will not be "
        "compacted and continually grow in size.",
    ),
    (
        "log.cleaner.io.buffer.load.factor",
        _T.DOUBLE,
        "0.9",
        False,
        "Log cleaner dedupe buffer load factor. The percentage full the dedupe buffer can become. A higher "
        "value will allow more log to be cleaned at once but will lead to more hash collisions",
    ),
    (
        "log.cleaner.io.buffer.size",
        _T.INT,
        "524288",
        False,
        "The total memory used for log cleaner I/O buffers across all cleaner threads",
    ),
    (
        "log.cleaner.io.max.bytes.per.second",
        _T.DOUBLE,
        "1.7976931348623157E308",
        False,
        "The log cleaner will be throttled so that the sum of its read and write i/o will be less than this "
        "value on average",
    ),
    (
        "log.cleaner.max.compaction.lag.ms",
        _T.LONG,
        "9223372036854775807",
        False,
        "The maximum time a message will remain ineligible for compaction in the log. Only applicable for "
        "logs that are being compacted.",
    ),
    (
        "log.cleaner.min.cleanable.ratio",
        _T.DOUBLE,
        "0.5",
        False,
        "The minimum ratio of dirty log to total log for a log to eligible for cleaning. If the "
        "log.cleaner.max.compaction.lag.ms or the log.cleaner.min.compaction.lag.ms configurations are also "
        "specified, then the log compactor considers the log eligible for compaction as soon as either: (i) "
        "the dirty ratio threshold has been met and the log has had dirty (uncompacted) records for at least "
        "the log.cleaner.min.compaction.lag.ms duration, or (ii) if the log has had dirty (uncompacted) "
        "records for at most the log.cleaner.max.compaction.lag.ms period.",
    ),
    (
        "log.cleaner.min.compaction.lag.ms",
        _T.LONG,
        "0",
        False,
        "The minimum time a message will remain uncompacted in the log. Only applicable for logs that are "
        "being compacted.",
    ),
    (
        "log.cleaner.threads",
        _T.INT,
        "1",
        False,
        "The number of background threads to use for log cleaning",
    ),
    (
        "log.cleanup.policy",
        _T.LIST,
        "delete",
        False,
        "The default cleanup policy for segments beyond the retention window. A comma separated list of "
        'valid policies. Valid policies are: "delete" and "compact"',
    ),
    (
        "log.dir",
        _T.STRING,
        "/tmp/kafka-logs",
        True,
        "The directory in which the log data is kept (supplemental for log.dirs property)",
    ),
    (
        "log.dir.failure.timeout.ms",
        _T.LONG,
        "30000",
        True,
        "If the broker is unable to successfully communicate to the controller that some log directory has "
        "failed for longer than this time, the broker will fail and shut down.",
    ),
    (
        "log.dirs",
        _T.STRING,
        None,
        True,
        "A comma-separated list of the directories where the log data is stored. If not set, the value in "
        "log.dir is used.",
    ),
    (
        "log.flush.interval.messages",
        _T.LONG,
        "9223372036854775807",
        False,
        "The number of messages accumulated on a log partition before messages are flushed to disk.",
    ),
    (
        "log.flush.interval.ms",
        _T.LONG,
        None,
        False,
        "The maximum time in ms that a message in any topic is kept in memory before flushed to disk. If not "
        "set, the value in log.flush.scheduler.interval.ms is used",
    ),
    (
        "log.flush.offset.checkpoint.interval.ms",
        _T.INT,
        "60000",
        True,
        "The frequency with which we update the persistent record of the last flush which acts as the log "
        "recovery point.",
    ),
    (
        "log.flush.scheduler.interval.ms",
        _T.LONG,
        "9223372036854775807",
        True,
        "The frequency in ms that the log flusher checks whether any log needs to be flushed to disk",
    ),
    (
        "log.flush.start.offset.checkpoint.interval.ms",
        _T.INT,
        "60000",
        True,
        "The frequency with which we update the persistent record of log start offset",
    ),
    (
        "log.index.interval.bytes",
        _T.INT,
        "4096",
        False,
        "The interval with which we add an entry to the offset index.",
    ),
    (
        "log.index.size.max.bytes",
        _T.INT,
        "10485760",
        False,
        "The maximum size in bytes of the offset index",
    ),
    (
        "log.local.retention.bytes",
        _T.LONG,
        "-2",
        False,
        "The maximum size of local log segments that can grow for a partition before it gets eligible for "
        "deletion. Default value is -2, it represents `log.retention.bytes` value to be used. The effective "
        "value should always be less than or equal to `log.retention.bytes` value.",
    ),
    (
        "log.local.retention.ms",
        _T.LONG,
        "-2",
        False,
        "The number of milliseconds to keep the local log segments before it gets eligible for deletion. "
        "Default value is -2, it represents `log.retention.ms` value is to be used. The effective value "
        "should always be less than or equal to `log.retention.ms` value.",
    ),
    (
        "log.message.timestamp.after.max.ms",
        _T.LONG,
        "3600000",
        False,
        "This configuration sets the allowable timestamp difference between the message timestamp and the "
        "broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp, "
        "with the maximum allowable difference determined by the value set in this configuration. If "
        "log.message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps "
        "exceeds this specified threshold. This configuration is ignored if "
        "log.message.timestamp.type=LogAppendTime.",
    ),
    (
        "log.message.timestamp.before.max.ms",
        _T.LONG,
        "9223372036854775807",
        False,
        "This configuration sets the allowable timestamp difference between the broker's timestamp and the "
        "message timestamp. The message timestamp can be earlier than or equal to the broker's timestamp, "
        "with the maximum allowable difference determined by the value set in this configuration. If "
        "log.message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps "
        "exceeds this specified threshold. This configuration is ignored if "
        "log.message.timestamp.type=LogAppendTime.",
    ),
    (
        "log.message.timestamp.type",
        _T.STRING,
        "CreateTime",
        False,
        "Define whether the timestamp in the message is message create time or log append time. The value "
        "should be either <code>CreateTime</code> or <code>LogAppendTime</code>.",
    ),
    (
        "log.preallocate",
        _T.BOOLEAN,
        "false",
        False,
        "Should pre allocate file when create new segment? If you are using Kafka on Windows, you probably "
        "need to set it to true.",
    ),
    (
        "log.retention.bytes",
        _T.LONG,
        "-1",
        False,
        "The maximum size of the log before deleting it",
    ),
    (
        "log.retention.check.interval.ms",
        _T.LONG,
        "300000",
        True,
        "The frequency in milliseconds that the log cleaner checks whether any log is eligible for deletion",
    ),
    (
        "log.retention.hours",
        _T.INT,
        "168",
        True,
        "The number of hours to keep a log file before deleting it (in hours), tertiary to log.retention.ms property",
    ),
    (
        "log.retention.minutes",
        _T.INT,
        None,
        True,
        "The number of minutes to keep a log file before deleting it (in minutes), secondary to "
        "log.retention.ms property. If not set, the value in log.retention.hours is used",
    ),
    (
        "log.retention.ms",
        _T.LONG,
        None,
        False,
        "The number of milliseconds to keep a log file before deleting it (in milliseconds), If not set, the "
        "value in log.retention.minutes is used. If set to -1, no time limit is applied.",
    ),
    (
        "log.roll.hours",
        _T.INT,
        "168",
        True,
        "The maximum time before a new log segment is rolled out (in hours), secondary to log.roll.ms property",
    ),
    (
        "log.roll.jitter.hours",
        _T.INT,
        "0",
        True,
        "The maximum jitter to subtract from logRollTimeMillis (in hours), secondary to log.roll.jitter.ms property",
    ),
    (
        "log.roll.jitter.ms",
        _T.LONG,
        None,
        False,
        "The maximum jitter to subtract from logRollTimeMillis (in milliseconds). If not set, the value in "
        "log.roll.jitter.hours is used",
    ),
    (
        "log.roll.ms",
        _T.LONG,
        None,
        False,
        "The maximum time before a new log segment is rolled out (in milliseconds). If not set, the value in "
        "log.roll.hours is used",
    ),
    (
        "log.segment.bytes",
        _T.INT,
        "1073741824",
        False,
        "The maximum size of a single log file",
    ),
    (
        "log.segment.delete.delay.ms",
        _T.LONG,
        "60000",
        False,
        "The amount of time to wait before deleting a file from the filesystem. If the value is 0 and there "
        "is no file to delete, the system will wait 1 millisecond. Low value will cause busy waiting",
    ),
    (
        "max.connection.creation.rate",
        _T.INT,
        "2147483647",
        False,
        "The maximum connection creation rate we allow in the broker at any time. Listener-level limits may "
        "also be configured by prefixing the config name with the listener prefix, for example, "
        "<code>listener.name.internal.max.connection.creation.rate</code>.Broker-wide connection rate limit "
        "should be configured based on broker capacity while listener limits should be configured based on "
        "application requirements. New connections will be throttled if either the listener or the broker "
        "limit is reached, with the exception of inter-broker listener. Connections on the inter-broker "
        "listener will be throttled only when the listener-level rate limit is reached.",
    ),
    (
        "max.connections",
        _T.INT,
        "2147483647",
        False,
        "The maximum number of connections we allow in the broker at any time. This limit is applied in "
        "addition to any per-ip limits configured using max.connections.per.ip. Listener-level limits may "
        "also be configured by prefixing the config name with the listener prefix, for example, "
        "<code>listener.name.internal.max.connections.per.ip</code>. Broker-wide limit should be configured "
        "based on broker capacity while listener limits should be configured based on application "
        "requirements. New connections are blocked if either the listener or broker limit is reached. "
        "Connections on the inter-broker listener are permitted even if broker-wide limit is reached. The "
        "least recently used connection on another listener will be closed in this case.",
    ),
    (
        "max.connections.per.ip",
        _T.INT,
        "2147483647",
        False,
        "The maximum number of connections we allow from each ip address. This can be set to 0 if there are "
        "overrides configured using max.connections.per.ip.overrides property. New connections from the ip "
        "address are dropped if the limit is reached.",
    ),
    (
        "max.connections.per.ip.overrides",
        _T.STRING,
        "",
        False,
        "A comma-separated list of per-ip or hostname overrides to the default maximum number of "
        'connections. An example value is "hostName:100,127.0.0.1:200"',
    ),
    (
        "max.incremental.fetch.session.cache.slots",
        _T.INT,
        "1000",
        True,
        "The maximum number of total incremental fetch sessions that we will maintain. FetchSessionCache is "
        "sharded into 8 shards and the limit is equally divided among all shards. Sessions are allocated to "
        "each shard in round-robin. Only entries within a shard are considered eligible for eviction.",
    ),
    (
        "max.request.partition.size.limit",
        _T.INT,
        "2000",
        True,
        "The maximum number of partitions can be served in one request.",
    ),
    (
        "message.max.bytes",
        _T.INT,
        "1048588",
        False,
        "The largest record batch size allowed by Kafka (after compression if compression is enabled). If "
        "this is increased and there are consumers older than 0.10.2, the consumers' fetch size must also be "
        "increased so that they can fetch record batches this large. In the latest message format version, "
        "records are always grouped into batches for efficiency. In previous message format versions, "
        "uncompressed records are not grouped into batches and this limit only applies to a single record in "
        "that case.This can be set per topic with the topic level <code>max.message.bytes</code> config.",
    ),
    (
        "metadata.log.dir",
        _T.STRING,
        None,
        True,
        "This configuration determines where we put the metadata log for clusters in KRaft mode. If it is "
        "not set, the metadata log is placed in the first log directory from log.dirs.",
    ),
    (
        "metadata.log.max.record.bytes.between.snapshots",
        _T.LONG,
        "20971520",
        True,
        "This is the maximum number of bytes in the log between the latest snapshot and the high-watermark "
        "needed before generating a new snapshot. The default value is 20971520. To generate snapshots based "
        "on the time elapsed, see the <code>metadata.log.max.snapshot.interval.ms</code> configuration. The "
        "Kafka node will generate a snapshot when either the maximum time interval is reached or the maximum "
        "bytes limit is reached.",
    ),
    (
        "metadata.log.max.snapshot.interval.ms",
        _T.LONG,
        "3600000",
        True,
        "This is the maximum number of milliseconds to wait to generate a snapshot if there are committed "
        "records in the log that are not included in the latest snapshot. A value of zero disables time "
        "based snapshot generation. The default value is 3600000. To generate snapshots based on the number "
        "of metadata bytes, see the <code>metadata.log.max.record.bytes.between.snapshots</code> "
        "configuration. The Kafka node will generate a snapshot when either the maximum time interval is "
        "reached or the maximum bytes limit is reached.",
    ),
    (
        "metadata.log.segment.bytes",
        _T.INT,
        "1073741824",
        True,
        "The maximum size of a single metadata log file.",
    ),
    (
        "metadata.log.segment.ms",
        _T.LONG,
        "604800000",
        True,
        "The maximum time before a new metadata log file is rolled out (in milliseconds).",
    ),
    (
        "metadata.max.idle.interval.ms",
        _T.INT,
        "500",
        True,
        "This configuration controls how often the active controller should write no-op records to the "
        "metadata partition. If the value is 0, no-op records are not appended to the metadata partition. "
        "The default value is 500",
    ),
    (
        "metadata.max.retention.bytes",
        _T.LONG,
        "104857600",
        True,
        "The maximum combined size of the metadata log and snapshots before deleting old snapshots and log "
        "files. Since at least one snapshot must exist before any logs can be deleted, this is a soft limit.",
    ),
    (
        "metadata.max.retention.ms",
        _T.LONG,
        "604800000",
        True,
        "The number of milliseconds to keep a metadata log file or snapshot before deleting it. Since at "
        "least one snapshot must exist before any logs can be deleted, this is a soft limit.",
    ),
    (
        "metric.reporters",
        _T.LIST,
        "org.apache.kafka.common.metrics.JmxReporter",
        False,
        "A list of classes to use as metrics reporters. Implementing the "
        "<code>org.apache.kafka.common.metrics.MetricsReporter</code> interface allows plugging in classes "
        "that will be notified of new metric creation. The JmxReporter is always included to register JMX "
        "statistics.",
    ),
    (
        "metrics.num.samples",
        _T.INT,
        "2",
        True,
        "The number of samples maintained to compute metrics.",
    ),
    (
        "metrics.recording.level",
        _T.STRING,
        "INFO",
        True,
        "The highest recording level for metrics.",
    ),
    (
        "metrics.sample.window.ms",
        _T.LONG,
        "30000",
        True,
        "The window of time a metrics sample is computed over.",
    ),
    (
        "min.insync.replicas",
        _T.INT,
        "1",
        False,
        'When a producer sets acks to "all" (or "-1"), <code>min.insync.replicas</code> specifies the '
        "minimum number of replicas that must acknowledge a write for the write to be considered successful. "
        "If this minimum cannot be met, then the producer will raise an exception (either "
        "<code>NotEnoughReplicas</code> or <code>NotEnoughReplicasAfterAppend</code>).<br>When used "
        "together, <code>min.insync.replicas</code> and acks allow you to enforce greater durability "
        "guarantees. A typical scenario would be to create a topic with a replication factor of 3, set "
        '<code>min.insync.replicas</code> to 2, and produce with acks of "all". This will ensure that the '
        "producer raises an exception if a majority of replicas do not receive a write.",
    ),
    (
        "node.id",
        _T.INT,
        None,
        True,
        "The node ID associated with the roles this process is playing when <code>process.roles</code> is "
        "non-empty. This is required configuration when running in KRaft mode.",
    ),
    (
        "num.io.threads",
        _T.INT,
        "8",
        False,
        "The number of threads that the server uses for processing requests, which may include disk I/O",
    ),
    (
        "num.network.threads",
        _T.INT,
        "3",
        False,
        "The number of threads that the server uses for receiving requests from the network and sending "
        "responses to the network. Noted: each listener (except for controller listener) creates its own "
        "thread pool.",
    ),
    (
        "num.partitions",
        _T.INT,
        "1",
        True,
        "The default number of log partitions per topic",
    ),
    (
        "num.recovery.threads.per.data.dir",
        _T.INT,
        "2",
        False,
        "The number of threads per data directory to be used for log recovery at startup and flushing at shutdown",
    ),
    (
        "num.replica.alter.log.dirs.threads",
        _T.INT,
        None,
        True,
        "The number of threads that can move replicas between log directories, which may include disk I/O",
    ),
    (
        "num.replica.fetchers",
        _T.INT,
        "1",
        False,
        "Number of fetcher threads used to replicate records from each source broker. The total number of "
        "fetchers on each broker is bound by <code>num.replica.fetchers</code> multiplied by the number of "
        "brokers in the cluster.Increasing this value can increase the degree of I/O parallelism in the "
        "follower and leader broker at the cost of higher CPU and memory utilization.",
    ),
    (
        "offset.metadata.max.bytes",
        _T.INT,
        "4096",
        True,
        "The maximum size for a metadata entry associated with an offset commit.",
    ),
    (
        "offsets.commit.timeout.ms",
        _T.INT,
        "5000",
        True,
        "Offset commit will be delayed until all replicas for the offsets topic receive the commit or this "
        "timeout is reached. This is similar to the producer request timeout.",
    ),
    (
        "offsets.load.buffer.size",
        _T.INT,
        "5242880",
        True,
        "Batch size for reading from the offsets segments when loading offsets into the cache (soft-limit, "
        "overridden if records are too large).",
    ),
    (
        "offsets.retention.check.interval.ms",
        _T.LONG,
        "600000",
        True,
        "Frequency at which to check for stale offsets",
    ),
    (
        "offsets.retention.minutes",
        _T.INT,
        "10080",
        True,
        "For subscribed consumers, committed offset of a specific partition will be expired and discarded "
        "when 1) this retention period has elapsed after the consumer group loses all its consumers (i.e. "
        "becomes empty); 2) this retention period has elapsed since the last time an offset is committed for "
        "the partition and the group is no longer subscribed to the corresponding topic. For standalone "
        "consumers (using manual assignment), offsets will be expired after this retention period has "
        "elapsed since the time of last commit. Note that when a group is deleted via the delete-group "
        "request, its committed offsets will also be deleted without extra retention period; also when a "
        "topic is deleted via the delete-topic request, upon propagated metadata update any group's "
        "committed offsets for that topic will also be deleted without extra retention period.",
    ),
    (
        "offsets.topic.compression.codec",
        _T.INT,
        "0",
        True,
        'Compression codec for the offsets topic - compression may be used to achieve "atomic" commits.',
    ),
    (
        "offsets.topic.num.partitions",
        _T.INT,
        "50",
        True,
        "The number of partitions for the offset commit topic (should not change after deployment).",
    ),
    (
        "offsets.topic.replication.factor",
        _T.SHORT,
        "3",
        True,
        "The replication factor for the offsets topic (set higher to ensure availability). Internal topic "
        "creation will fail until the cluster size meets this replication factor requirement.",
    ),
    (
        "offsets.topic.segment.bytes",
        _T.INT,
        "104857600",
        True,
        "The offsets topic segment bytes should be kept relatively small in order to facilitate faster log "
        "compaction and cache loads.",
    ),
    (
        "principal.builder.class",
        _T.CLASS,
        "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
        False,
        "The fully qualified name of a class that implements the KafkaPrincipalBuilder interface, which is "
        "used to build the KafkaPrincipal object used during authorization. If no principal builder is "
        "defined, the default behavior depends on the security protocol in use. For SSL authentication,  the "
        "principal will be derived using the rules defined by <code>ssl.principal.mapping.rules</code> "
        "applied on the distinguished name from the client certificate if one is provided; otherwise, if "
        "client authentication is not required, the principal name will be ANONYMOUS. For SASL "
        "authentication, the principal will be derived using the rules defined by "
        "<code>sasl.kerberos.principal.to.local.rules</code> if GSSAPI is in use, and the SASL "
        "authentication ID for other mechanisms. For PLAINTEXT, the principal will be ANONYMOUS.",
    ),
    (
        "process.roles",
        _T.LIST,
        None,
        True,
        "The roles that this process plays: 'broker', 'controller', or 'broker,controller' if it is both. "
        "This configuration is only applicable for clusters in KRaft (Kafka Raft) mode (instead of "
        "ZooKeeper). Leave this config undefined or empty for ZooKeeper clusters.",
    ),
    (
        "producer.id.expiration.ms",
        _T.INT,
        "86400000",
        False,
        "The time in ms that a topic partition leader will wait before expiring producer IDs. Producer IDs "
        "will not expire while a transaction associated to them is still ongoing. Note that producer IDs may "
        "expire sooner if the last write from the producer ID is deleted due to the topic's retention "
        "settings. Setting this value the same or higher than <code>delivery.timeout.ms</code> can help "
        "prevent expiration during retries and protect against message duplication, but the default should "
        "be reasonable for most use cases.",
    ),
    (
        "producer.purgatory.purge.interval.requests",
        _T.INT,
        "1000",
        True,
        "The purge interval (in number of requests) of the producer request purgatory",
    ),
    (
        "queued.max.request.bytes",
        _T.LONG,
        "-1",
        True,
        "The number of queued bytes allowed before no more requests are read",
    ),
    (
        "queued.max.requests",
        _T.INT,
        "500",
        True,
        "The number of queued requests allowed for data-plane, before blocking the network threads",
    ),
    (
        "quota.window.num",
        _T.INT,
        "11",
        True,
        "The number of samples to retain in memory for client quotas",
    ),
    (
        "quota.window.size.seconds",
        _T.INT,
        "1",
        True,
        "The time span of each sample for client quotas",
    ),
    (
        "remote.fetch.max.wait.ms",
        _T.INT,
        "500",
        False,
        "The maximum amount of time the server will wait before answering the remote fetch request",
    ),
    (
        "remote.list.offsets.request.timeout.ms",
        _T.LONG,
        "30000",
        False,
        "The maximum amount of time the server will wait for the remote list offsets request to complete.",
    ),
    (
        "remote.log.index.file.cache.total.size.bytes",
        _T.LONG,
        "1073741824",
        False,
        "The total size of the space allocated to store index files fetched from remote storage in the local storage.",
    ),
    (
        "remote.log.manager.copier.thread.pool.size",
        _T.INT,
        "10",
        False,
        "Size of the thread pool used in scheduling tasks to copy segments. The default value of -1 means "
        "that this will be set to the configured value of remote.log.manager.thread.pool.size, if available; "
        "otherwise, it defaults to 10.",
    ),
    (
        "remote.log.manager.copy.max.bytes.per.second",
        _T.LONG,
        "9223372036854775807",
        False,
        "The maximum number of bytes that can be copied from local storage to remote storage per second. "
        "This is a global limit for all the partitions that are being copied from local storage to remote "
        "storage. The default value is Long.MAX_VALUE, which means there is no limit on the number of bytes "
        "that can be copied per second.",
    ),
    (
        "remote.log.manager.copy.quota.window.num",
        _T.INT,
        "11",
        True,
        "The number of samples to retain in memory for remote copy quota management. The default value is "
        "11, which means there are 10 whole windows + 1 current window.",
    ),
    (
        "remote.log.manager.copy.quota.window.size.seconds",
        _T.INT,
        "1",
        True,
        "The time span of each sample for remote copy quota management. The default value is 1 second.",
    ),
    (
        "remote.log.manager.expiration.thread.pool.size",
        _T.INT,
        "10",
        False,
        "Size of the thread pool used in scheduling tasks to clean up remote log segments. The default value "
        "of -1 means that this will be set to the configured value of remote.log.manager.thread.pool.size, "
        "if available; otherwise, it defaults to 10.",
    ),
    (
        "remote.log.manager.fetch.max.bytes.per.second",
        _T.LONG,
        "9223372036854775807",
        False,
        "The maximum number of bytes that can be fetched from remote storage to local storage per second. "
        "This is a global limit for all the partitions that are being fetched from remote storage to local "
        "storage. The default value is Long.MAX_VALUE, which means there is no limit on the number of bytes "
        "that can be fetched per second.",
    ),
    (
        "remote.log.manager.fetch.quota.window.num",
        _T.INT,
        "11",
        True,
        "The number of samples to retain in memory for remote fetch quota management. The default value is "
        "11, which means there are 10 whole windows + 1 current window.",
    ),
    (
        "remote.log.manager.fetch.quota.window.size.seconds",
        _T.INT,
        "1",
        True,
        "The time span of each sample for remote fetch quota management. The default value is 1 second.",
    ),
    (
        "remote.log.manager.task.interval.ms",
        _T.LONG,
        "30000",
        True,
        "Interval at which remote log manager runs the scheduled tasks like copy segments, and clean up "
        "remote log segments.",
    ),
    (
        "remote.log.manager.thread.pool.size",
        _T.INT,
        "2",
        True,
        "Deprecated. Size of the thread pool used in scheduling tasks to copy segments, fetch remote log "
        "indexes and clean up remote log segments.",
    ),
    (
        "remote.log.metadata.custom.metadata.max.bytes",
        _T.INT,
        "128",
        True,
        "The maximum size of custom metadata in bytes that the broker should accept from a remote storage "
        "plugin. If custom  metadata exceeds this limit, the updated segment metadata will not be stored, "
        "the copied data will be attempted to delete, and the remote copying task for this topic-partition "
        "will stop with an error.",
    ),
    (
        "remote.log.metadata.manager.class.name",
        _T.STRING,
        "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager",
        True,
        "Fully qualified class name of `RemoteLogMetadataManager` implementation.",
    ),
    (
        "remote.log.metadata.manager.class.path",
        _T.STRING,
        None,
        True,
        "Class path of the `RemoteLogMetadataManager` implementation. If specified, the "
        "RemoteLogMetadataManager implementation and its dependent libraries will be loaded by a dedicated "
        "classloader which searches this class path before the Kafka broker class path. The syntax of this "
        "parameter is same as the standard Java class path string.",
    ),
    (
        "remote.log.metadata.manager.impl.prefix",
        _T.STRING,
        "rlmm.config.",
        True,
        "Prefix used for properties to be passed to RemoteLogMetadataManager implementation. For example "
        "this value can be `rlmm.config.`.",
    ),
    (
        "remote.log.metadata.manager.listener.name",
        _T.STRING,
        None,
        True,
        "Listener name of the local broker to which it should get connected if needed by "
        "RemoteLogMetadataManager implementation.",
    ),
    (
        "remote.log.reader.max.pending.tasks",
        _T.INT,
        "100",
        True,
        "Maximum remote log reader thread pool task queue size. If the task queue is full, fetch requests "
        "are served with an error.",
    ),
    (
        "remote.log.reader.threads",
        _T.INT,
        "10",
        False,
        "Size of the thread pool that is allocated for handling remote log reads.",
    ),
    (
        "remote.log.storage.manager.class.name",
        _T.STRING,
        None,
        True,
        "Fully qualified class name of `RemoteStorageManager` implementation.",
    ),
    (
        "remote.log.storage.manager.class.path",
        _T.STRING,
        None,
        True,
        "Class path of the `RemoteStorageManager` implementation. If specified, the RemoteStorageManager "
        "implementation and its dependent libraries will be loaded by a dedicated classloader which searches "
        "this class path before the Kafka broker class path. The syntax of this parameter is same as the "
        "standard Java class path string.",
    ),
    (
        "remote.log.storage.manager.impl.prefix",
        _T.STRING,
        "rsm.config.",
        True,
        "Prefix used for properties to be passed to RemoteStorageManager implementation. For example this "
        "value can be `rsm.config.`.",
    ),
    (
        "remote.log.storage.system.enable",
        _T.BOOLEAN,
        "false",
        True,
        "Whether to enable tiered storage functionality in a broker or not. Valid values are `true` or "
        "`false` and the default value is false. When it is true broker starts all the services required for "
        "the tiered storage functionality.",
    ),
    (
        "replica.fetch.backoff.ms",
        _T.INT,
        "1000",
        True,
        "The amount of time to sleep when fetch partition error occurs.",
    ),
    (
        "replica.fetch.max.bytes",
        _T.INT,
        "1048576",
        True,
        "The number of bytes of messages to attempt to fetch for each partition. This is not an absolute "
        "maximum, if the first record batch in the first non-empty partition of the fetch is larger than "
        "this value, the record batch will still be returned to ensure that progress can be made. The "
        "maximum record batch size accepted by the broker is defined via <code>message.max.bytes</code> "
        "(broker config) or <code>max.message.bytes</code> (topic config).",
    ),
    (
        "replica.fetch.min.bytes",
        _T.INT,
        "1",
        True,
        "Minimum bytes expected for each fetch response. If not enough bytes, wait up to "
        "<code>replica.fetch.wait.max.ms</code> (broker config).",
    ),
    (
        "replica.fetch.response.max.bytes",
        _T.INT,
        "10485760",
        True,
        "Maximum bytes expected for the entire fetch response. Records are fetched in batches, and if the "
        "first record batch in the first non-empty partition of the fetch is larger than this value, the "
        "record batch will still be returned to ensure that progress can be made. As such, this is not an "
        "absolute maximum. The maximum record batch size accepted by the broker is defined via "
        "<code>message.max.bytes</code> (broker config) or <code>max.message.bytes</code> (topic config).",
    ),
    (
        "replica.fetch.wait.max.ms",
        _T.INT,
        "500",
        True,
        "The maximum wait time for each fetcher request issued by follower replicas. This value should "
        "always be less than the replica.lag.time.max.ms at all times to prevent frequent shrinking of ISR "
        "for low throughput topics",
    ),
    (
        "replica.high.watermark.checkpoint.interval.ms",
        _T.LONG,
        "5000",
        True,
        "The frequency with which the high watermark is saved out to disk",
    ),
    (
        "replica.lag.time.max.ms",
        _T.LONG,
        "30000",
        True,
        "If a follower hasn't sent any fetch requests or hasn't consumed up to the leaders log end offset "
        "for at least this time, the leader will remove the follower from isr",
    ),
    (
        "replica.selector.class",
        _T.STRING,
        None,
        True,
        "The fully qualified class name that implements ReplicaSelector. This is used by the broker to find "
        "the preferred read replica. By default, we use an implementation that returns the leader.",
    ),
    (
        "replica.socket.receive.buffer.bytes",
        _T.INT,
        "65536",
        True,
        "The socket receive buffer for network requests to the leader for replicating data",
    ),
    (
        "replica.socket.timeout.ms",
        _T.INT,
        "30000",
        True,
        "The socket timeout for network requests. Its value should be at least replica.fetch.wait.max.ms",
    ),
    (
        "replication.quota.window.num",
        _T.INT,
        "11",
        True,
        "The number of samples to retain in memory for replication quotas",
    ),
    (
        "replication.quota.window.size.seconds",
        _T.INT,
        "1",
        True,
        "The time span of each sample for replication quotas",
    ),
    (
        "request.timeout.ms",
        _T.INT,
        "30000",
        True,
        "The configuration controls the maximum amount of time the client will wait for the response of a "
        "request. If the response is not received before the timeout elapses the client will resend the "
        "request if necessary or fail the request if retries are exhausted.",
    ),
    (
        "sasl.client.callback.handler.class",
        _T.CLASS,
        None,
        True,
        "The fully qualified name of a SASL client callback handler class that implements the "
        "AuthenticateCallbackHandler interface.",
    ),
    (
        "sasl.enabled.mechanisms",
        _T.LIST,
        "GSSAPI",
        False,
        "The list of SASL mechanisms enabled in the Kafka server. The list may contain any mechanism for "
        "which a security provider is available. Only GSSAPI is enabled by default.",
    ),
    (
        "sasl.jaas.config",
        _T.PASSWORD,
        None,
        False,
        "JAAS login context parameters for SASL connections in the format used by JAAS configuration files. "
        "JAAS configuration file format is described <a "
        'href="https://docs.oracle.com/javase/8/docs/technotes/guides/security/jgss/tutorials/LoginConfigFile'
        '.html">here</a>. The format for the value is: <code>loginModuleClass controlFlag '
        "(optionName=optionValue)*;</code>. For brokers, the config must be prefixed with listener prefix "
        "and SASL mechanism name in lower-case. For example, "
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=com.example.ScramLoginModule required;",
    ),
    (
        "sasl.kerberos.kinit.cmd",
        _T.STRING,
        "/usr/bin/kinit",
        False,
        "Kerberos kinit command path.",
    ),
    (
        "sasl.kerberos.min.time.before.relogin",
        _T.LONG,
        "60000",
        False,
        "Login thread sleep time between refresh attempts.",
    ),
    (
        "sasl.kerberos.principal.to.local.rules",
        _T.LIST,
        "DEFAULT",
        False,
        "A list of rules for mapping from principal names to short names (typically operating system "
        "usernames). The rules are evaluated in order and the first rule that matches a principal name is "
        "used to map it to a short name. Any later rules in the list are ignored. By default, principal "
        "names of the form <code>{username}/{hostname}@{REALM}</code> are mapped to <code>{username}</code>. "
        'For more details on the format please see <a href="#security_authz"> security authorization and '
        "acls</a>. Note that this configuration is ignored if an extension of "
        "<code>KafkaPrincipalBuilder</code> is provided by the <code>principal.builder.class</code> "
        "configuration.",
    ),
    (
        "sasl.kerberos.service.name",
        _T.STRING,
        None,
        False,
        "The Kerberos principal name that Kafka runs as. This can be defined either in Kafka's JAAS config "
        "or in Kafka's config.",
    ),
    (
        "sasl.kerberos.ticket.renew.jitter",
        _T.DOUBLE,
        "0.05",
        False,
        "Percentage of random jitter added to the renewal time.",
    ),
    (
        "sasl.kerberos.ticket.renew.window.factor",
        _T.DOUBLE,
        "0.8",
        False,
        "Login thread will sleep until the specified window factor of time from last refresh to ticket's "
        "expiry has been reached, at which time it will try to renew the ticket.",
    ),
    (
        "sasl.login.callback.handler.class",
        _T.CLASS,
        None,
        True,
        "The fully qualified name of a SASL login callback handler class that implements the "
        "AuthenticateCallbackHandler interface. For brokers, login callback handler config must be prefixed "
        "with listener prefix and SASL mechanism name in lower-case. For example, "
        "listener.name.sasl_ssl.scram-sha-256.sasl.login.callback.handler.class=com.example.CustomScramLoginC"
        "allbackHandler",
    ),
    (
        "sasl.login.class",
        _T.CLASS,
        None,
        True,
        "The fully qualified name of a class that implements the Login interface. For brokers, login config "
        "must be prefixed with listener prefix and SASL mechanism name in lower-case. For example, "
        "listener.name.sasl_ssl.scram-sha-256.sasl.login.class=com.example.CustomScramLogin",
    ),
    (
        "sasl.login.connect.timeout.ms",
        _T.INT,
        None,
        True,
        "The (optional) value in milliseconds for the external authentication provider connection timeout. "
        "Currently applies only to OAUTHBEARER.",
    ),
    (
        "sasl.login.read.timeout.ms",
        _T.INT,
        None,
        True,
        "The (optional) value in milliseconds for the external authentication provider read timeout. "
        "Currently applies only to OAUTHBEARER.",
    ),
    (
        "sasl.login.refresh.buffer.seconds",
        _T.SHORT,
        "300",
        False,
        "The amount of buffer time before credential expiration to maintain when refreshing a credential, in "
        "seconds. If a refresh would otherwise occur closer to expiration than the number of buffer seconds "
        "then the refresh will be moved up to maintain as much of the buffer time as possible. Legal values "
        "are between 0 and 3600 (1 hour); a default value of  300 (5 minutes) is used if no value is "
        "specified. This value and sasl.login.refresh.min.period.seconds are both ignored if their sum "
        "exceeds the remaining lifetime of a credential. Currently applies only to OAUTHBEARER.",
    ),
    (
        "sasl.login.refresh.min.period.seconds",
        _T.SHORT,
        "60",
        False,
        "The desired minimum time for the login refresh thread to wait before refreshing a credential, in "
        "seconds. Legal values are between 0 and 900 (15 minutes); a default value of 60 (1 minute) is used "
        "if no value is specified.  This value and  sasl.login.refresh.buffer.seconds are both ignored if "
        "their sum exceeds the remaining lifetime of a credential. Currently applies only to OAUTHBEARER.",
    ),
    (
        "sasl.login.refresh.window.factor",
        _T.DOUBLE,
        "0.8",
        False,
        "Login refresh thread will sleep until the specified window factor relative to the credential's "
        "lifetime has been reached, at which time it will try to refresh the credential. Legal values are "
        "between 0.5 (50%) and 1.0 (100%) inclusive; a default value of 0.8 (80%) is used if no value is "
        "specified. Currently applies only to OAUTHBEARER.",
    ),
    (
        "sasl.login.refresh.window.jitter",
        _T.DOUBLE,
        "0.05",
        False,
        "The maximum amount of random jitter relative to the credential's lifetime that is added to the "
        "login refresh thread's sleep time. Legal values are between 0 and 0.25 (25%) inclusive; a default "
        "value of 0.05 (5%) is used if no value is specified. Currently applies only to OAUTHBEARER.",
    ),
    (
        "sasl.login.retry.backoff.max.ms",
        _T.LONG,
        "10000",
        True,
        "The (optional) value in milliseconds for the maximum wait between login attempts to the external "
        "authentication provider. Login uses an exponential backoff algorithm with an initial wait based on "
        "the sasl.login.retry.backoff.ms setting and will double in wait length between attempts up to a "
        "maximum wait length specified by the sasl.login.retry.backoff.max.ms setting. Currently applies "
        "only to OAUTHBEARER.",
    ),
    (
        "sasl.login.retry.backoff.ms",
        _T.LONG,
        "100",
        True,
        "The (optional) value in milliseconds for the initial wait between login attempts to the external "
        "authentication provider. Login uses an exponential backoff algorithm with an initial wait based on "
        "the sasl.login.retry.backoff.ms setting and will double in wait length between attempts up to a "
        "maximum wait length specified by the sasl.login.retry.backoff.max.ms setting. Currently applies "
        "only to OAUTHBEARER.",
    ),
    (
        "sasl.mechanism.controller.protocol",
        _T.STRING,
        "GSSAPI",
        True,
        "SASL mechanism used for communication with controllers. Default is GSSAPI.",
    ),
    (
        "sasl.mechanism.inter.broker.protocol",
        _T.STRING,
        "GSSAPI",
        False,
        "SASL mechanism used for inter-broker communication. Default is GSSAPI.",
    ),
    (
        "sasl.oauthbearer.clock.skew.seconds",
        _T.INT,
        "30",
        True,
        "The (optional) value in seconds to allow for differences between the time of the OAuth/OIDC "
        "identity provider and the broker.",
    ),
    (
        "sasl.oauthbearer.expected.audience",
        _T.LIST,
        None,
        True,
        "The (optional) comma-delimited setting for the broker to use to verify that the JWT was issued for "
        'one of the expected audiences. The JWT will be inspected for the standard OAuth "aud" claim and if '
        'this value is set, the broker will match the value from JWT\'s "aud" claim  to see if there is an '
        "exact match. If there is no match, the broker will reject the JWT and authentication will fail.",
    ),
    (
        "sasl.oauthbearer.expected.issuer",
        _T.STRING,
        None,
        True,
        "The (optional) setting for the broker to use to verify that the JWT was created by the expected "
        'issuer. The JWT will be inspected for the standard OAuth "iss" claim and if this value is set, the '
        'broker will match it exactly against what is in the JWT\'s "iss" claim. If there is no match, the '
        "broker will reject the JWT and authentication will fail.",
    ),
    (
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        _T.LONG,
        "3600000",
        True,
        "The (optional) value in milliseconds for the broker to wait between refreshing its JWKS (JSON Web "
        "Key Set) cache that contains the keys to verify the signature of the JWT.",
    ),
    (
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        _T.LONG,
        "10000",
        True,
        "The (optional) value in milliseconds for the maximum wait between attempts to retrieve the JWKS "
        "(JSON Web Key Set) from the external authentication provider. JWKS retrieval uses an exponential "
        "backoff algorithm with an initial wait based on the sasl.oauthbearer.jwks.endpoint.retry.backoff.ms "
        "setting and will double in wait length between attempts up to a maximum wait length specified by "
        "the sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms setting.",
    ),
    (
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        _T.LONG,
        "100",
        True,
        "The (optional) value in milliseconds for the initial wait between JWKS (JSON Web Key Set) retrieval "
        "attempts from the external authentication provider. JWKS retrieval uses an exponential backoff "
        "algorithm with an initial wait based on the sasl.oauthbearer.jwks.endpoint.retry.backoff.ms setting "
        "and will double in wait length between attempts up to a maximum wait length specified by the "
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms setting.",
    ),
    (
        "sasl.oauthbearer.jwks.endpoint.url",
        _T.STRING,
        None,
        True,
        "The OAuth/OIDC provider URL from which the provider's <a "
        'href="https://datatracker.ietf.org/doc/html/rfc7517#section-5">JWKS (JSON Web Key Set)</a> can be '
        "retrieved. The URL can be HTTP(S)-based or file-based. If the URL is HTTP(S)-based, the JWKS data "
        "will be retrieved from the OAuth/OIDC provider via the configured URL on broker startup. All "
        "then-current keys will be cached on the broker for incoming requests. If an authentication request "
        'is received for a JWT that includes a "kid" header claim value that isn\'t yet in the cache, the '
        "JWKS endpoint will be queried again on demand. However, the broker polls the URL every "
        "sasl.oauthbearer.jwks.endpoint.refresh.ms milliseconds to refresh the cache with any forthcoming "
        "keys before any JWT requests that include them are received. If the URL is file-based, the broker "
        "will load the JWKS file from a configured location on startup. In the event that the JWT includes a "
        '"kid" header value that isn\'t in the JWKS file, the broker will reject the JWT and authentication '
        "will fail.",
    ),
    (
        "sasl.oauthbearer.scope.claim.name",
        _T.STRING,
        "scope",
        True,
        'The OAuth claim for the scope is often named "scope", but this (optional) setting can provide a '
        "different name to use for the scope included in the JWT payload's claims if the OAuth/OIDC provider "
        "uses a different name for that claim.",
    ),
    (
        "sasl.oauthbearer.sub.claim.name",
        _T.STRING,
        "sub",
        True,
        'The OAuth claim for the subject is often named "sub", but this (optional) setting can provide a '
        "different name to use for the subject included in the JWT payload's claims if the OAuth/OIDC "
        "provider uses a different name for that claim.",
    ),
    (
        "sasl.oauthbearer.token.endpoint.url",
        _T.STRING,
        None,
        True,
        "The URL for the OAuth/OIDC identity provider. If the URL is HTTP(S)-based, it is the issuer's token "
        "endpoint URL to which requests will be made to login based on the configuration in "
        "sasl.jaas.config. If the URL is file-based, it specifies a file containing an access token (in JWT "
        "serialized form) issued by the OAuth/OIDC identity provider to use for authorization.",
    ),
    (
        "sasl.server.callback.handler.class",
        _T.CLASS,
        None,
        True,
        "The fully qualified name of a SASL server callback handler class that implements the "
        "AuthenticateCallbackHandler interface. Server callback handlers must be prefixed with listener "
        "prefix and SASL mechanism name in lower-case. For example, "
        "listener.name.sasl_ssl.plain.sasl.server.callback.handler.class=com.example.CustomPlainCallbackHandl"
        "er.",
    ),
    (
        "sasl.server.max.receive.size",
        _T.INT,
        "524288",
        True,
        "The maximum receive size allowed before and during initial SASL authentication. Default receive "
        "size is 512KB. GSSAPI limits requests to 64K, but we allow upto 512KB by default for custom SASL "
        "mechanisms. In practice, PLAIN, SCRAM and OAUTH mechanisms can use much smaller limits.",
    ),
    (
        "security.inter.broker.protocol",
        _T.STRING,
        "PLAINTEXT",
        True,
        "Security protocol used to communicate between brokers. Valid values are: PLAINTEXT, SSL, "
        "SASL_PLAINTEXT, SASL_SSL. It is an error to set this and inter.broker.listener.name properties at "
        "the same time.",
    ),
    (
        "security.providers",
        _T.STRING,
        None,
        True,
        "A list of configurable creator classes each returning a provider implementing security algorithms. "
        "These classes should implement the "
        "<code>org.apache.kafka.common.security.auth.SecurityProviderCreator</code> interface.",
    ),
    (
        "share.coordinator.append.linger.ms",
        _T.INT,
        "10",
        True,
        "The duration in milliseconds that the share coordinator will wait for writes to accumulate before "
        "flushing them to disk.",
    ),
    (
        "share.coordinator.load.buffer.size",
        _T.INT,
        "5242880",
        True,
        "Batch size for reading from the share-group state topic when loading state information into the "
        "cache (soft-limit, overridden if records are too large).",
    ),
    (
        "share.coordinator.snapshot.update.records.per.snapshot",
        _T.INT,
        "500",
        True,
        "The number of update records the share coordinator writes between snapshot records.",
    ),
    (
        "share.coordinator.state.topic.compression.codec",
        _T.INT,
        "0",
        True,
        "Compression codec for the share-group state topic.",
    ),
    (
        "share.coordinator.state.topic.min.isr",
        _T.SHORT,
        "2",
        True,
        "Overridden min.insync.replicas for the share-group state topic.",
    ),
    (
        "share.coordinator.state.topic.num.partitions",
        _T.INT,
        "50",
        True,
        "The number of partitions for the share-group state topic (should not change after deployment).",
    ),
    (
        "share.coordinator.state.topic.replication.factor",
        _T.SHORT,
        "3",
        True,
        "Replication factor for the share-group state topic. Topic creation will fail until the cluster size "
        "meets this replication factor requirement.",
    ),
    (
        "share.coordinator.state.topic.segment.bytes",
        _T.INT,
        "104857600",
        True,
        "The log segment size for the share-group state topic.",
    ),
    (
        "share.coordinator.threads",
        _T.INT,
        "1",
        True,
        "The number of threads used by the share coordinator.",
    ),
    (
        "share.coordinator.write.timeout.ms",
        _T.INT,
        "5000",
        True,
        "The duration in milliseconds that the share coordinator will wait for all replicas of the "
        "share-group state topic to receive a write.",
    ),
    (
        "share.fetch.purgatory.purge.interval.requests",
        _T.INT,
        "1000",
        True,
        "The purge interval (in number of requests) of the share fetch request purgatory",
    ),
    (
        "socket.connection.setup.timeout.max.ms",
        _T.LONG,
        "30000",
        True,
        "The maximum amount of time the client will wait for the socket connection to be established. The "
        "connection setup timeout will increase exponentially for each consecutive connection failure up to "
        "this maximum. To avoid connection storms, a randomization factor of 0.2 will be applied to the "
        "timeout resulting in a random range between 20% below and 20% above the computed value.",
    ),
    (
        "socket.connection.setup.timeout.ms",
        _T.LONG,
        "10000",
        True,
        "The amount of time the client will wait for the socket connection to be established. If the "
        "connection is not built before the timeout elapses, clients will close the socket channel. This "
        "value is the initial backoff value and will increase exponentially for each consecutive connection "
        "failure, up to the <code>socket.connection.setup.timeout.max.ms</code> value.",
    ),
    (
        "socket.listen.backlog.size",
        _T.INT,
        "50",
        True,
        "The maximum number of pending connections on the socket. In Linux, you may also need to configure "
        "<code>somaxconn</code> and <code>tcp_max_syn_backlog</code> kernel parameters accordingly to make "
        "the configuration takes effect.",
    ),
    (
        "socket.receive.buffer.bytes",
        _T.INT,
        "102400",
        True,
        "The SO_RCVBUF buffer of the socket server sockets. If the value is -1, the OS default will be used.",
    ),
    (
        "socket.request.max.bytes",
        _T.INT,
        "104857600",
        True,
        "The maximum number of bytes in a socket request",
    ),
    (
        "socket.send.buffer.bytes",
        _T.INT,
        "102400",
        True,
        "The SO_SNDBUF buffer of the socket server sockets. If the value is -1, the OS default will be used.",
    ),
    (
        "ssl.allow.dn.changes",
        _T.BOOLEAN,
        "false",
        True,
        "Indicates whether changes to the certificate distinguished name should be allowed during a dynamic "
        "reconfiguration of certificates or not.",
    ),
    (
        "ssl.allow.san.changes",
        _T.BOOLEAN,
        "false",
        True,
        "Indicates whether changes to the certificate subject alternative names should be allowed during a "
        "dynamic reconfiguration of certificates or not.",
    ),
    (
        "ssl.cipher.suites",
        _T.LIST,
        "",
        False,
        "A list of cipher suites. This is a named combination of authentication, encryption, MAC and key "
        "exchange algorithm used to negotiate the security settings for a network connection using TLS or "
        "SSL network protocol. By default all the available cipher suites are supported.",
    ),
    (
        "ssl.client.auth",
        _T.STRING,
        "none",
        False,
        "Configures kafka broker to request client authentication. The following settings are common:  <ul> "
        "<li><code>ssl.client.auth=required</code> If set to required client authentication is required. "
        "<li><code>ssl.client.auth=requested</code> This means client authentication is optional. unlike "
        "required, if this option is set client can choose not to provide authentication information about "
        "itself <li><code>ssl.client.auth=none</code> This means client authentication is not needed.</ul>",
    ),
    (
        "ssl.enabled.protocols",
        _T.LIST,
        "TLSv1.2,TLSv1.3",
        False,
        "The list of protocols enabled for SSL connections. The default is 'TLSv1.2,TLSv1.3' when running "
        "with Java 11 or newer, 'TLSv1.2' otherwise. With the default value for Java 11, clients and servers "
        "will prefer TLSv1.3 if both support it and fallback to TLSv1.2 otherwise (assuming both support at "
        "least TLSv1.2). This default should be fine for most cases. Also see the config documentation for "
        "`ssl.protocol`.",
    ),
    (
        "ssl.endpoint.identification.algorithm",
        _T.STRING,
        "https",
        False,
        "The endpoint identification algorithm to validate server hostname using server certificate. ",
    ),
    (
        "ssl.engine.factory.class",
        _T.CLASS,
        None,
        False,
        "The class of type org.apache.kafka.common.security.auth.SslEngineFactory to provide SSLEngine "
        "objects. Default value is org.apache.kafka.common.security.ssl.DefaultSslEngineFactory. "
        "Alternatively, setting this to "
        "org.apache.kafka.common.security.ssl.CommonNameLoggingSslEngineFactory will log the common name of "
        "expired SSL certificates used by clients to authenticate at any of the brokers with log level INFO. "
        "Note that this will cause a tiny delay during establishment of new connections from mTLS clients to "
        "brokers due to the extra code for examining the certificate chain provided by the client. Note "
        "further that the implementation uses a custom truststore based on the standard Java truststore and "
        "thus might be considered a security risk due to not being as mature as the standard one.",
    ),
    (
        "ssl.key.password",
        _T.PASSWORD,
        None,
        False,
        "The password of the private key in the key store file or the PEM key specified in 'ssl.keystore.key'.",
    ),
    (
        "ssl.keymanager.algorithm",
        _T.STRING,
        "SunX509",
        False,
        "The algorithm used by key manager factory for SSL connections. Default value is the key manager "
        "factory algorithm configured for the Java Virtual Machine.",
    ),
    (
        "ssl.keystore.certificate.chain",
        _T.PASSWORD,
        None,
        False,
        "Certificate chain in the format specified by 'ssl.keystore.type'. Default SSL engine factory "
        "supports only PEM format with a list of X.509 certificates",
    ),
    (
        "ssl.keystore.key",
        _T.PASSWORD,
        None,
        False,
        "Private key in the format specified by 'ssl.keystore.type'. Default SSL engine factory supports "
        "only PEM format with PKCS#8 keys. If the key is encrypted, key password must be specified using "
        "'ssl.key.password'",
    ),
    (
        "ssl.keystore.location",
        _T.STRING,
        None,
        False,
        "The location of the key store file. This is optional for client and can be used for two-way "
        "authentication for client.",
    ),
    (
        "ssl.keystore.password",
        _T.PASSWORD,
        None,
        False,
        "The store password for the key store file. This is optional for client and only needed if "
        "'ssl.keystore.location' is configured. Key store password is not supported for PEM format.",
    ),
    (
        "ssl.keystore.type",
        _T.STRING,
        "JKS",
        False,
        "The file format of the key store file. This is optional for client. The values currently supported "
        "by the default `ssl.engine.factory.class` are [JKS, PKCS12, PEM].",
    ),
    (
        "ssl.principal.mapping.rules",
        _T.STRING,
        "DEFAULT",
        True,
        "A list of rules for mapping from distinguished name from the client certificate to short name. The "
        "rules are evaluated in order and the first rule that matches a principal name is used to map it to "
        "a short name. Any later rules in the list are ignored. By default, distinguished name of the X.500 "
        "certificate will be the principal. For more details on the format please see <a "
        'href="#security_authz"> security authorization and acls</a>. Note that this configuration is '
        "ignored if an extension of KafkaPrincipalBuilder is provided by the "
        "<code>principal.builder.class</code> configuration.",
    ),
    (
        "ssl.protocol",
        _T.STRING,
        "TLSv1.3",
        False,
        "The SSL protocol used to generate the SSLContext. The default is 'TLSv1.3' when running with Java "
        "11 or newer, 'TLSv1.2' otherwise. This value should be fine for most use cases. Allowed values in "
        "recent JVMs are 'TLSv1.2' and 'TLSv1.3'. 'TLS', 'TLSv1.1', 'SSL', 'SSLv2' and 'SSLv3' may be "
        "supported in older JVMs, but their usage is discouraged due to known security vulnerabilities. With "
        "the default value for this config and 'ssl.enabled.protocols', clients will downgrade to 'TLSv1.2' "
        "if the server does not support 'TLSv1.3'. If this config is set to 'TLSv1.2', clients will not use "
        "'TLSv1.3' even if it is one of the values in ssl.enabled.protocols and the server only supports "
        "'TLSv1.3'.",
    ),
    (
        "ssl.provider",
        _T.STRING,
        None,
        False,
        "The name of the security provider used for SSL connections. Default value is the default security "
        "provider of the JVM.",
    ),
    (
        "ssl.secure.random.implementation",
        _T.STRING,
        None,
        False,
        "The SecureRandom PRNG implementation to use for SSL cryptography operations. ",
    ),
    (
        "ssl.trustmanager.algorithm",
        _T.STRING,
        "PKIX",
        False,
        "The algorithm used by trust manager factory for SSL connections. Default value is the trust manager "
        "factory algorithm configured for the Java Virtual Machine.",
    ),
    (
        "ssl.truststore.certificates",
        _T.PASSWORD,
        None,
        False,
        "Trusted certificates in the format specified by 'ssl.truststore.type'. Default SSL engine factory "
        "supports only PEM format with X.509 certificates.",
    ),
    (
        "ssl.truststore.location",
        _T.STRING,
        None,
        False,
        "The location of the trust store file.",
    ),
    (
        "ssl.truststore.password",
        _T.PASSWORD,
        None,
        False,
        "The password for the trust store file. If a password is not set, trust store file configured will "
        "still be used, but integrity checking is disabled. Trust store password is not supported for PEM "
        "format.",
    ),
    (
        "ssl.truststore.type",
        _T.STRING,
        "JKS",
        False,
        "The file format of the trust store file. The values currently supported by the default "
        "`ssl.engine.factory.class` are [JKS, PKCS12, PEM].",
    ),
    (
        "telemetry.max.bytes",
        _T.INT,
        "1048576",
        True,
        "The maximum size (after compression if compression is used) of telemetry metrics pushed from a "
        "client to the broker. The default value is 1048576 (1 MB).",
    ),
    (
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        _T.INT,
        "10000",
        True,
        "The interval at which to rollback transactions that have timed out",
    ),
    (
        "transaction.max.timeout.ms",
        _T.INT,
        "900000",
        True,
        "The maximum allowed timeout for transactions. If a client\u2019s requested transaction time exceed this, "
        "then the broker will return an error in InitProducerIdRequest. This prevents a client from too "
        "large of a timeout, which can stall consumers reading from topics included in the transaction.",
    ),
    (
        "transaction.partition.verification.enable",
        _T.BOOLEAN,
        "true",
        False,
        "Enable verification that checks that the partition has been added to the transaction before writing "
        "transactional records to the partition",
    ),
    (
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        _T.INT,
        "3600000",
        True,
        "The interval at which to remove transactions that have expired due to "
        "<code>transactional.id.expiration.ms</code> passing",
    ),
    (
        "transaction.state.log.load.buffer.size",
        _T.INT,
        "5242880",
        True,
        "Batch size for reading from the transaction log segments when loading producer ids and transactions "
        "into the cache (soft-limit, overridden if records are too large).",
    ),
    (
        "transaction.state.log.min.isr",
        _T.INT,
        "2",
        True,
        "The minimum number of replicas that must acknowledge a write to transaction topic in order to be "
        "considered successful.",
    ),
    (
        "transaction.state.log.num.partitions",
        _T.INT,
        "50",
        True,
        "The number of partitions for the transaction topic (should not change after deployment).",
    ),
    (
        "transaction.state.log.replication.factor",
        _T.SHORT,
        "3",
        True,
        "The replication factor for the transaction topic (set higher to ensure availability). Internal "
        "topic creation will fail until the cluster size meets this replication factor requirement.",
    ),
    (
        "transaction.state.log.segment.bytes",
        _T.INT,
        "104857600",
        True,
        "The transaction topic segment bytes should be kept relatively small in order to facilitate faster "
        "log compaction and cache loads",
    ),
    (
        "transactional.id.expiration.ms",
        _T.INT,
        "604800000",
        True,
        "The time in ms that the transaction coordinator will wait without receiving any transaction status "
        "updates for the current transaction before expiring its transactional id. Transactional IDs will "
        "not expire while a the transaction is still ongoing.",
    ),
    (
        "unclean.leader.election.enable",
        _T.BOOLEAN,
        "false",
        False,
        "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, "
        "even though doing so may result in data loss<p>Note: In KRaft mode, when enabling this config "
        "dynamically, it needs to wait for the unclean leader election thread to trigger election "
        "periodically (default is 5 minutes). Please run `kafka-leader-election.sh` with `unclean` option to "
        "trigger the unclean leader election immediately if needed.</p>",
    ),
)

KAFKA_40_BROKER_CONFIGS: tuple[ConfigKey, ...] = tuple(
    ConfigKey(name, type_, default, doc, read_only=read_only, sensitive=type_ is ConfigType.PASSWORD)
    for name, type_, default, read_only, doc in _ROWS
)
