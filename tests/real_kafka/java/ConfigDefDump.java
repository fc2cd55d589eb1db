import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;

/**
 * Prints Kafka's own config definitions, one per line in definition order, as tab-separated fields:
 * BROKER or TOPIC, name, type, default (ConfigDef.convertToString; "<none>" when required), validator (its
 * toString, empty when none). BROKER is KafkaConfig.configDef(), TOPIC is LogConfig's ConfigDef. The tests compare
 * QuotaBroker's validators and topic config table with it (tests/test_broker_config_set.py).
 */
public class ConfigDefDump {
    public static void main(String[] args) {
        print("BROKER", kafka.server.KafkaConfig.configDef());
        print("TOPIC", org.apache.kafka.storage.internals.log.LogConfig.configDefCopy());
    }

    private static void print(String kind, ConfigDef def) {
        for (Map.Entry<String, ConfigDef.ConfigKey> entry : def.configKeys().entrySet()) {
            ConfigDef.ConfigKey key = entry.getValue();
            String value = key.hasDefault() ? String.valueOf(ConfigDef.convertToString(key.defaultValue, key.type)) : "<none>";
            String validator = key.validator == null ? "" : key.validator.toString();
            System.out.println(String.join("\t", kind, key.name, key.type.name(), value, validator));
        }
    }
}
