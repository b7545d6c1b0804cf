// A real YARN beside the MiniDFSCluster, for shoal's Spark-on-YARN tests: one ResourceManager and
// one NodeManager (Hadoop's MiniYARNCluster) in this JVM, the NodeManager launching real
// containers (Spark's application master and executors) as child processes of this one.
//
// Sized for a 2-core test machine: containers of 256 MiB steps, a NodeManager offering
// `nodeMemoryMb` and 16 virtual cores (vcores are only accounting here: Spark asks one per
// executor core), the physical-memory check on (a container whose process tree -- executor JVM,
// Python workers, shoal members -- outgrows its size is killed, as on a real cluster; on a
// gVisor sandbox its /proc accounting was not seen to fire) and the virtual-memory check off
// (JVMs reserve far more address space than they use).
//
// Two queues under the CapacityScheduler: `default` (75 % of the node) and `small` (25 %, capped),
// so a test can submit into a queue too small for a job. Application directories (the containers'
// working directories with their launch scripts) are kept for an hour after an application ends
// (yarn.nodemanager.delete.debug-delay-sec), so tests can read them; logs stay in the
// NodeManager's log directory (no aggregation).
//
// writeClientConf writes what a client needs to submit (`spark-submit --master yarn` with
// HADOOP_CONF_DIR): core-site.xml naming the HDFS and yarn-site.xml naming the ResourceManager.
package org.shoal.hdfs;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import com.google.inject.servlet.GuiceFilter;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.webapp.WebApp;

final class MiniYarn {
  private MiniYarn() {}

  // The keys a client copies from the running cluster into its yarn-site.xml: where the
  // ResourceManager's services listen (their ports are chosen at start).
  private static final String[] CLIENT_KEYS = {
    YarnConfiguration.RM_ADDRESS,
    YarnConfiguration.RM_SCHEDULER_ADDRESS,
    YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS,
    YarnConfiguration.RM_ADMIN_ADDRESS,
    YarnConfiguration.RM_WEBAPP_ADDRESS,
    YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB,
    YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB,
  };

  static MiniYARNCluster start(String defaultFs, int nodeMemoryMb) {
    YarnConfiguration conf = new YarnConfiguration();
    conf.set("fs.defaultFS", defaultFs);
    // Memory: 256 MiB steps up to 2 GiB a container; the node's total is the test's budget.
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 256);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, 2048);
    conf.setInt(YarnConfiguration.YARN_MINICLUSTER_NM_PMEM_MB, nodeMemoryMb);
    conf.setInt(YarnConfiguration.NM_PMEM_MB, nodeMemoryMb);
    conf.setInt(YarnConfiguration.NM_VCORES, 16);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, 4);
    // MiniYARNCluster turns both memory checks off unless told it controls them.
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_CONTROL_RESOURCE_MONITORING, true);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, true);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    // A full disk on a developer's machine must not mark the only node unhealthy.
    conf.setBoolean(YarnConfiguration.NM_DISK_HEALTH_CHECK_ENABLE, false);
    conf.setLong(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 3600);
    // Quick container and node heartbeats: applications start in seconds, not tens of seconds.
    conf.setLong(YarnConfiguration.RM_NM_HEARTBEAT_INTERVAL_MS, 200);
    conf.setLong(YarnConfiguration.NM_CONTAINER_MON_INTERVAL_MS, 1000);
    conf.set(
        YarnConfiguration.RM_SCHEDULER,
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler");
    String cs = "yarn.scheduler.capacity.";
    conf.set(cs + "root.queues", "default,small");
    conf.set(cs + "root.default.capacity", "75");
    conf.set(cs + "root.default.maximum-capacity", "100");
    conf.set(cs + "root.small.capacity", "25");
    conf.set(cs + "root.small.maximum-capacity", "25");
    // Application masters (Spark's driver in cluster mode) may take half of a queue, not the
    // default tenth, which on a small node would hold every application in ACCEPTED.
    conf.set(cs + "maximum-am-resource-percent", "0.5");

    MiniYARNCluster cluster = new MiniYARNCluster("shoal-yarn", 1, 1, 1, 1);
    cluster.init(conf);
    cluster.start();
    return cluster;
  }

  /**
   * Makes the ResourceManager's web server answer with its own pages and REST API again.
   *
   * <p>Hadoop's web apps register Guice's GuiceFilter by class name, so each instance uses the
   * filter pipeline Guice keeps in a static field, and the last web app started sets it: with the
   * ResourceManager and the NodeManager in one JVM, the NodeManager's, which answers 404 to
   * /ws/v1/cluster/... on the ResourceManager's port. Setting the static pipeline back to the
   * ResourceManager's (which its web app's injected filter holds) fixes the ResourceManager's
   * pages; the NodeManager's web pages (container logs in a browser) then answer 404, which no
   * test needs.
   */
  static void serveResourceManagerWebApp(MiniYARNCluster cluster) throws Exception {
    Method getWebapp = ResourceManager.class.getDeclaredMethod("getWebapp");
    getWebapp.setAccessible(true);
    WebApp webApp = (WebApp) getWebapp.invoke(cluster.getResourceManager());
    Field filterField = WebApp.class.getDeclaredField("guiceFilter");
    filterField.setAccessible(true);
    GuiceFilter filter = (GuiceFilter) filterField.get(webApp);
    Field injected = GuiceFilter.class.getDeclaredField("injectedPipeline");
    injected.setAccessible(true);
    Field shared = GuiceFilter.class.getDeclaredField("pipeline");
    shared.setAccessible(true);
    shared.set(null, injected.get(filter));
  }

  /** Waits until the NodeManager has registered; false after `timeoutMillis`. */
  static boolean waitForNode(MiniYARNCluster cluster, long timeoutMillis) throws Exception {
    return cluster.waitForNodeManagersToConnect(timeoutMillis);
  }

  static String webAddress(MiniYARNCluster cluster) {
    return cluster.getConfig().get(YarnConfiguration.RM_WEBAPP_ADDRESS);
  }

  static String rmAddress(MiniYARNCluster cluster) {
    return cluster.getConfig().get(YarnConfiguration.RM_ADDRESS);
  }

  /** core-site.xml and yarn-site.xml in `dir`, each written to a temporary name and renamed. */
  static void writeClientConf(File dir, String defaultFs, MiniYARNCluster cluster)
      throws IOException {
    Files.createDirectories(dir.toPath());
    Configuration core = new Configuration(false);
    core.set("fs.defaultFS", defaultFs);
    writeXml(core, new File(dir, "core-site.xml"));
    if (cluster == null) {
      return;
    }
    Configuration yarn = new Configuration(false);
    Configuration running = cluster.getConfig();
    for (String key : CLIENT_KEYS) {
      yarn.set(key, running.get(key));
    }
    writeXml(yarn, new File(dir, "yarn-site.xml"));
  }

  private static void writeXml(Configuration conf, File target) throws IOException {
    File temp = new File(target.getPath() + ".tmp");
    try (OutputStream out = Files.newOutputStream(temp.toPath())) {
      conf.writeXml(out);
    }
    Files.move(temp.toPath(), target.toPath(), StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
  }
}
