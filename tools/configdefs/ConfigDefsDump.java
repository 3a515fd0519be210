/*
 * Dumps one Apache Kafka release's own config definitions as JSON on stdout, read from that release's jars on the
 * classpath (tools/configdefs/dump.sh runs it; tools/gen_catalog.py turns the dumps into the reconciler's catalog).
 *
 * Nothing here restates a Kafka fact: every value is read from the class that defines it, by reflection, so one
 * program reads 3.9.x and 4.x alike (classes moved between them; each lookup names every place it may live):
 *   broker        kafka.server.KafkaConfig.configDef()                      (AbstractKafkaConfig.CONFIG_DEF + KRaft)
 *   topic         org.apache.kafka.storage.internals.log.LogConfig.configKeys()
 *                 + ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS      (broker synonyms and their converters)
 *   quota         QuotaConfigs (3.9) / QuotaConfig (4.x): userAndClientQuotaConfigs, scramMechanismsPlus...,
 *                 ipConfigs, brokerQuotaConfigs
 *   group         org.apache.kafka.coordinator.group.GroupConfig.configDef() (4.x; ConfigResource.Type.GROUP)
 *   clientMetrics org.apache.kafka.server.metrics.ClientMetricsConfigs.configDef()
 *   dynamic       kafka.server.DynamicBrokerConfig's sets (AllDynamicConfigs, PerBrokerConfigs, ...),
 *                 brokerConfigSynonyms(name, false), kafka.server.DynamicConfig.Broker.names()
 *   features      org.apache.kafka.server.common.Feature (4.x) / Features (3.9), MetadataVersion
 * Usage: java -cp '<libs>/*' tools/configdefs/ConfigDefsDump.java > kafka/configdefs/<version>.json
 */

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;

public class ConfigDefsDump {

    public static void main(String[] args) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        Class<?> appInfo = Class.forName("org.apache.kafka.common.utils.AppInfoParser");
        out.put("kafka_version", appInfo.getMethod("getVersion").invoke(null));
        out.put("kafka_commit", appInfo.getMethod("getCommitId").invoke(null));
        out.put("extracted_by", "tools/configdefs/ConfigDefsDump.java (reflection over the release's own jars)");
        out.put("java", System.getProperty("java.version"));

        Map<String, Object> broker = configDef(invokeStatic("kafka.server.KafkaConfig", "configDef"));
        Map<String, Object> brokerSynonyms = new TreeMap<>();
        Object dbc = module("kafka.server.DynamicBrokerConfig$");
        for (String name : broker.keySet()) {
            List<String> synonyms = strings(call(dbc, "brokerConfigSynonyms", name, false));
            if (synonyms.size() > 1) brokerSynonyms.put(name, synonyms);
        }
        out.put("broker", broker);
        out.put("broker_synonyms", brokerSynonyms);

        Map<String, Object> dynamic = new TreeMap<>();
        for (String set : List.of("AllDynamicConfigs", "PerBrokerConfigs", "ClusterLevelListenerConfigs",
                "ListenerMechanismConfigs", "DynamicSecurityConfigs", "DynamicProducerStateManagerConfig",
                "ReloadableFileConfigs", "DynamicPasswordConfigs")) {
            Object value = staticFieldEndingWith("kafka.server.DynamicBrokerConfig$", set);
            if (value != null) dynamic.put(set, sorted(strings(value)));
        }
        dynamic.put("DynamicConfig.Broker.names", sorted(strings(call(module("kafka.server.DynamicConfig$Broker$"), "names"))));
        out.put("dynamic", dynamic);

        Class<?> logConfig = Class.forName("org.apache.kafka.storage.internals.log.LogConfig");
        @SuppressWarnings("unchecked")
        Map<String, Object> topicKeys = (Map<String, Object>) logConfig.getMethod("configKeys").invoke(null);
        Map<String, Object> topic = new TreeMap<>();
        for (Object key : topicKeys.values()) {
            Map<String, Object> entry = configKey(key);
            topic.put((String) entry.remove("name"), entry);
        }
        Class<?> synonymsClass = Class.forName("org.apache.kafka.server.config.ServerTopicConfigSynonyms");
        Map<?, ?> allSynonyms = (Map<?, ?>) synonymsClass.getField("ALL_TOPIC_CONFIG_SYNONYMS").get(null);
        Class<?> configSynonym = Class.forName("org.apache.kafka.server.config.ConfigSynonym");
        Map<Object, String> converters = new LinkedHashMap<>();
        converters.put(configSynonym.getField("HOURS_TO_MILLISECONDS").get(null), "hours_to_ms");
        converters.put(configSynonym.getField("MINUTES_TO_MILLISECONDS").get(null), "minutes_to_ms");
        for (Map.Entry<?, ?> e : allSynonyms.entrySet()) {
            List<Object> list = new ArrayList<>();
            for (Object s : (List<?>) e.getValue()) {
                Map<String, Object> syn = new LinkedHashMap<>();
                syn.put("name", call(s, "name"));
                Object converter = call(s, "converter");
                syn.put("converter", converters.getOrDefault(converter, "identity"));
                list.add(syn);
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> entry = (Map<String, Object>) topic.get((String) e.getKey());
            if (entry != null) entry.put("server_synonyms", list);
        }
        out.put("topic", topic);
        Object noServerDefault = staticField(logConfig, "CONFIGS_WITH_NO_SERVER_DEFAULTS");
        out.put("topic_no_server_default", noServerDefault == null ? null : sorted(strings(noServerDefault)));

        Class<?> quotas = firstClass("org.apache.kafka.server.config.QuotaConfig", "org.apache.kafka.server.config.QuotaConfigs");
        Map<String, Object> quota = new TreeMap<>();
        quota.put("clients", configDef(quotas.getMethod("userAndClientQuotaConfigs").invoke(null)));
        quota.put("users", configDef(quotas.getMethod("scramMechanismsPlusUserAndClientQuotaConfigs").invoke(null)));
        quota.put("ips", configDef(quotas.getMethod("ipConfigs").invoke(null)));
        quota.put("brokers", configDef(quotas.getMethod("brokerQuotaConfigs").invoke(null)));
        out.put("quota", quota);

        Class<?> group = optionalClass("org.apache.kafka.coordinator.group.GroupConfig");
        out.put("group", group == null ? null : configDef(group.getMethod("configDef").invoke(null)));
        Class<?> clientMetrics = optionalClass("org.apache.kafka.server.metrics.ClientMetricsConfigs");
        out.put("client_metrics", clientMetrics == null ? null : configDef(clientMetrics.getMethod("configDef").invoke(null)));

        List<Object> resourceTypes = new ArrayList<>();
        for (Object t : Class.forName("org.apache.kafka.common.config.ConfigResource$Type").getEnumConstants()) {
            Map<String, Object> type = new LinkedHashMap<>();
            type.put("name", ((Enum<?>) t).name());
            type.put("id", call(t, "id"));
            resourceTypes.add(type);
        }
        out.put("config_resource_types", resourceTypes);
        out.put("features", features());
        out.put("metadata_versions", metadataVersions());

        StringBuilder sb = new StringBuilder();
        write(sb, out, 0);
        System.out.println(sb);
    }

    // --- config definitions ------------------------------------------------------------------------------------

    static Map<String, Object> configDef(Object def) throws Exception {
        Map<?, ?> keys = (Map<?, ?>) call(def, "configKeys");
        Map<String, Object> out = new TreeMap<>();
        for (Object key : keys.values()) {
            Map<String, Object> entry = configKey(key);
            out.put((String) entry.remove("name"), entry);
        }
        return out;
    }

    static Map<String, Object> configKey(Object key) throws Exception {
        Class<?> c = key.getClass();
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("name", c.getField("name").get(key));
        Object type = c.getField("type").get(key);
        entry.put("type", ((Enum<?>) type).name());
        Object dflt = c.getField("defaultValue").get(key);
        Class<?> configDef = Class.forName("org.apache.kafka.common.config.ConfigDef");
        if (dflt == configDef.getField("NO_DEFAULT_VALUE").get(null)) {
            entry.put("required", true);
        } else {
            Method convert = configDef.getMethod("convertToString", Object.class, type.getClass());
            entry.put("default", convert.invoke(null, dflt, type));
        }
        Object validator = c.getField("validator").get(key);
        if (validator != null) entry.put("validator", validator(validator, 0));
        if ((Boolean) c.getField("internalConfig").get(key)) entry.put("internal", true);
        entry.put("importance", String.valueOf(c.getField("importance").get(key)));
        return entry;
    }

    /** A validator: its class, Kafka's own toString and every plain field (bounds, allowed strings, nested validators). */
    static Map<String, Object> validator(Object v, int depth) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("class", v.getClass().getName());
        out.put("text", String.valueOf(v));
        if (depth > 3) return out;
        for (Class<?> c = v.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers()) || f.isSynthetic()) continue;
                f.setAccessible(true);
                Object value = f.get(v);
                Object plain = plain(value, depth);
                if (plain != null) out.put(f.getName(), plain);
            }
        }
        return out;
    }

    static Object plain(Object value, int depth) throws Exception {
        if (value instanceof Number || value instanceof Boolean) return value;
        if (value instanceof String || value instanceof Enum<?> || value instanceof Pattern) return String.valueOf(value);
        if (value instanceof Collection<?> coll) {
            List<Object> list = new ArrayList<>();
            for (Object o : coll) list.add(o instanceof Enum<?> || o instanceof String ? String.valueOf(o) : plain(o, depth));
            return list;
        }
        Class<?> validatorType = Class.forName("org.apache.kafka.common.config.ConfigDef$Validator");
        if (validatorType.isInstance(value)) return validator(value, depth + 1);
        return null;  // lambdas, suppliers: only their toString (the validator's text) is readable
    }

    // --- features -------------------------------------------------------------------------------------------

    static List<Object> features() throws Exception {
        Class<?> feature = firstClass("org.apache.kafka.server.common.Feature", "org.apache.kafka.server.common.Features");
        List<?> production = (List<?>) feature.getField("PRODUCTION_FEATURES").get(null);
        List<Object> out = new ArrayList<>();
        for (Object f : production) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("name", call(f, "featureName"));
            entry.put("minimum_production", call(f, "minimumProduction"));
            entry.put("latest_production", call(f, "latestProduction"));
            entry.put("latest_testing", call(f, "latestTesting"));
            List<Object> levels = new ArrayList<>();
            for (Object fv : (Object[]) call(f, "featureVersions")) {
                Map<String, Object> level = new LinkedHashMap<>();
                level.put("level", call(fv, "featureLevel"));
                level.put("bootstrap_metadata_version", String.valueOf(call(call(fv, "bootstrapMetadataVersion"), "version")));
                level.put("dependencies", new TreeMap<>((Map<?, ?>) call(fv, "dependencies")));
                levels.add(level);
            }
            entry.put("levels", levels);
            out.add(entry);
        }
        return out;
    }

    static Map<String, Object> metadataVersions() throws Exception {
        Class<?> mv = Class.forName("org.apache.kafka.server.common.MetadataVersion");
        Map<String, Object> out = new LinkedHashMap<>();
        List<Object> versions = new ArrayList<>();
        for (Object v : (Object[]) mv.getField("VERSIONS").get(null)) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("version", call(v, "version"));
            entry.put("level", call(v, "featureLevel"));
            entry.put("production", call(v, "isProduction"));
            entry.put("metadata_changed", call(v, "didMetadataChange"));
            versions.add(entry);
        }
        out.put("versions", versions);
        Object minimum = staticField(mv, "MINIMUM_VERSION");
        if (minimum == null) minimum = staticField(mv, "MINIMUM_KRAFT_VERSION");
        out.put("minimum_kraft", minimum == null ? null : call(minimum, "version"));
        out.put("latest_production", call(mv.getField("LATEST_PRODUCTION").get(null), "version"));
        return out;
    }

    // --- reflection helpers -----------------------------------------------------------------------------------

    static Class<?> optionalClass(String name) {
        try {
            return Class.forName(name);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    static Class<?> firstClass(String... names) throws ClassNotFoundException {
        for (String n : names) {
            Class<?> c = optionalClass(n);
            if (c != null) return c;
        }
        throw new ClassNotFoundException(String.join(" | ", names));
    }

    static Object module(String name) throws Exception {
        return Class.forName(name).getField("MODULE$").get(null);
    }

    static Object invokeStatic(String cls, String method) throws Exception {
        return Class.forName(cls).getMethod(method).invoke(null);
    }

    static Object staticField(Class<?> c, String name) throws Exception {
        try {
            Field f = c.getDeclaredField(name);
            f.setAccessible(true);
            return f.get(null);
        } catch (NoSuchFieldException e) {
            return null;
        }
    }

    /** A private Scala object field, whose name may carry the `kafka$server$...$$` mangling prefix. */
    static Object staticFieldEndingWith(String cls, String name) throws Exception {
        for (Field f : Class.forName(cls).getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && (f.getName().equals(name) || f.getName().endsWith("$$" + name))) {
                f.setAccessible(true);
                return f.get(null);
            }
        }
        return null;
    }

    static Object call(Object target, String method, Object... args) throws Exception {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(method) && m.getParameterCount() == args.length) {
                    m.setAccessible(true);
                    return m.invoke(target, args);
                }
            }
        }
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals(method) && m.getParameterCount() == args.length) return m.invoke(target, args);
        }
        throw new NoSuchMethodException(target.getClass().getName() + "." + method);
    }

    /** A Java collection or a Scala one (anything with iterator()), as strings. */
    static List<String> strings(Object collection) throws Exception {
        List<String> out = new ArrayList<>();
        if (collection instanceof Collection<?> coll) {
            for (Object o : coll) out.add(String.valueOf(o));
            return out;
        }
        Object it = call(collection, "iterator");
        if (it instanceof Iterator<?> jit) {
            while (jit.hasNext()) out.add(String.valueOf(jit.next()));
            return out;
        }
        while ((Boolean) call(it, "hasNext")) out.add(String.valueOf(call(it, "next")));
        return out;
    }

    static List<String> sorted(List<String> in) {
        return new ArrayList<>(new TreeSet<>(in));
    }

    // --- JSON -----------------------------------------------------------------------------------------------

    static void write(StringBuilder sb, Object v, int indent) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Map<?, ?> map) {
            if (map.isEmpty()) {
                sb.append("{}");
                return;
            }
            boolean leaf = indent >= 2;  // one compact line per config below the top two levels
            sb.append("{");
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) sb.append(leaf ? ", " : ",");
                first = false;
                if (!leaf) sb.append("\n").append("  ".repeat(indent + 1));
                string(sb, String.valueOf(e.getKey()));
                sb.append(": ");
                write(sb, e.getValue(), indent + 1);
            }
            if (!leaf) sb.append("\n").append("  ".repeat(indent));
            sb.append("}");
        } else if (v instanceof List<?> list) {
            sb.append("[");
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) sb.append(", ");
                write(sb, list.get(i), Math.max(indent, 2));
            }
            sb.append("]");
        } else if (v instanceof Number || v instanceof Boolean) {
            if (v instanceof Double d && (d.isInfinite() || d.isNaN())) string(sb, d.toString());
            else sb.append(v);
        } else {
            string(sb, String.valueOf(v));
        }
    }

    static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (ch < 0x20 || ch > 0x7e) sb.append(String.format("\\u%04x", (int) ch));
                    else sb.append(ch);
                }
            }
        }
        sb.append('"');
    }
}
