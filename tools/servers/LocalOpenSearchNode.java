// A local OpenSearch node from Maven Central jars, with no distribution and no plugins directory:
// the HTTP/transport (netty4) and analysis-common plugins are classpath plugins, passed to the
// Node constructor that takes them.  Arguments are settings, KEY=VALUE each.  Compiled with javac
// by tools/servers/local_opensearch.py, which also starts and stops it.
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.transport.Netty4Plugin;

public class LocalOpenSearchNode extends Node {
    LocalOpenSearchNode(Environment environment) {
        super(environment, List.of(Netty4Plugin.class, CommonAnalysisPlugin.class), true);
    }

    public static void main(String[] args) throws Exception {
        Settings.Builder builder = Settings.builder();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            builder.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        Settings settings = builder.build();
        String name = settings.get("node.name", "node");
        Environment environment = InternalSettingsPreparer.prepareEnvironment(settings, java.util.Collections.emptyMap(), null, () -> name);
        LocalOpenSearchNode node = new LocalOpenSearchNode(environment);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try { node.close(); } catch (Exception e) { }
            stopped.countDown();
        }));
        node.start();
        System.out.println("started");  // local_opensearch.py waits for HTTP, not for this line
        System.out.flush();
        stopped.await();
    }
}
