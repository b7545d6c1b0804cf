// A real HDFS on loopback for shoal's tests: one NameNode and one DataNode (Hadoop's
// MiniDFSCluster) bound to 127.0.0.1, WebHDFS enabled, permissions enforced; with --yarn also a
// YARN (MiniYarn.java: a ResourceManager and a NodeManager running real containers).
//
//   java -cp CLASSPATH org.shoal.hdfs.MiniHdfs --dir DIR --ready-file FILE
//        [--conf-dir CONF] [--yarn] [--yarn-memory-mb MB] [--watch-stdin] [--max-seconds N]
//
// DIR holds the cluster's storage (wiped on start). With --conf-dir, CONF receives the Hadoop
// client configuration (core-site.xml; with --yarn also yarn-site.xml) for HADOOP_CONF_DIR. With
// --yarn, the YARN's directories go under Hadoop's test data directory (the system property
// test.build.data)/shoal-yarn/, and FILE.yarn is written before FILE with one line
// "RMHOST:RMPORT RMHOST:WEBPORT". When everything is up, FILE is written
// (atomically, by rename) with one line "127.0.0.1:RPCPORT HTTPPORT". The process stops on SIGTERM,
// on EOF of standard input with --watch-stdin (so a test that dies takes the cluster with it), or
// after --max-seconds (default 3600) so a cluster nobody stopped does not run forever.
//
// The root directory is made world-writable with the sticky bit (like /tmp), so tests can create
// directories as any user name while permissions still apply inside them. The user that starts
// this process is the HDFS superuser.
package org.shoal.hdfs;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

public final class MiniHdfs {
  private MiniHdfs() {}

  private static void usage(String problem) {
    System.err.println("MiniHdfs: " + problem);
    System.err.println(
        "usage: MiniHdfs --dir DIR --ready-file FILE [--conf-dir CONF] [--yarn]"
            + " [--yarn-memory-mb MB] [--watch-stdin] [--max-seconds N]");
    System.exit(2);
  }

  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable t) {
      // The clusters' own threads would keep the JVM alive: a failed start must end it.
      t.printStackTrace();
      System.err.println("MiniHdfs: failed to start: " + t);
      Runtime.getRuntime().halt(1);
    }
  }

  private static void run(String[] args) throws Exception {
    String dir = null;
    String readyFile = null;
    String confDir = null;
    boolean yarn = false;
    int yarnMemoryMb = 8192;
    boolean watchStdin = false;
    long maxSeconds = 3600;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--dir":
          if (++i >= args.length) usage("--dir needs a value");
          dir = args[i];
          break;
        case "--ready-file":
          if (++i >= args.length) usage("--ready-file needs a value");
          readyFile = args[i];
          break;
        case "--conf-dir":
          if (++i >= args.length) usage("--conf-dir needs a value");
          confDir = args[i];
          break;
        case "--yarn":
          yarn = true;
          break;
        case "--yarn-memory-mb":
          if (++i >= args.length) usage("--yarn-memory-mb needs a value");
          try {
            yarnMemoryMb = Integer.parseInt(args[i]);
          } catch (NumberFormatException e) {
            usage("--yarn-memory-mb is not a number: " + args[i]);
          }
          if (yarnMemoryMb < 1024) usage("--yarn-memory-mb must be at least 1024");
          break;
        case "--watch-stdin":
          watchStdin = true;
          break;
        case "--max-seconds":
          if (++i >= args.length) usage("--max-seconds needs a value");
          try {
            maxSeconds = Long.parseLong(args[i]);
          } catch (NumberFormatException e) {
            usage("--max-seconds is not a number: " + args[i]);
          }
          if (maxSeconds <= 0) usage("--max-seconds must be positive");
          break;
        default:
          usage("unknown argument " + args[i]);
      }
    }
    if (dir == null || readyFile == null) usage("--dir and --ready-file are required");

    Configuration conf = new HdfsConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(dir, "data").getAbsolutePath());
    conf.setBoolean("dfs.webhdfs.enabled", true);
    conf.setBoolean("dfs.permissions.enabled", true);
    // Small blocks, so a test file of a few tens of MB spans several blocks (reads and appends
    // cross block boundaries). 1 MiB is the NameNode's smallest allowed block size.
    conf.setLong("dfs.blocksize", 4L << 20);
    conf.setInt("dfs.replication", 1);
    conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
    conf.set("dfs.namenode.http-bind-host", "127.0.0.1");
    conf.set("dfs.namenode.http-address", "127.0.0.1:0");
    conf.set("dfs.datanode.address", "127.0.0.1:0");
    conf.set("dfs.datanode.http.address", "127.0.0.1:0");
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
    conf.set("dfs.datanode.hostname", "127.0.0.1");
    // Tests run on a small shared machine: no trash, quick heartbeats.
    conf.setLong("fs.trash.interval", 0);
    conf.setLong("dfs.heartbeat.interval", 1);

    final MiniDFSCluster cluster =
        new MiniDFSCluster.Builder(conf)
            .numDataNodes(1)
            .nameNodePort(0)
            .nameNodeHttpPort(0)
            .format(true)
            .checkDataNodeHostConfig(true)
            .build();
    final CountDownLatch stop = new CountDownLatch(1);
    final MiniYARNCluster[] yarnCluster = {null};
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  stop.countDown();
                  // YARN first: its NodeManager stops the containers, which may use HDFS.
                  synchronized (yarnCluster) {
                    if (yarnCluster[0] != null) yarnCluster[0].stop();
                  }
                  cluster.shutdown();
                }));
    cluster.waitActive();
    cluster.getFileSystem().setPermission(new Path("/"), new FsPermission((short) 01777));

    int rpcPort = cluster.getNameNodePort();
    int httpPort = cluster.getNameNode().getHttpAddress().getPort();
    String defaultFs = "hdfs://127.0.0.1:" + rpcPort;
    if (yarn) {
      synchronized (yarnCluster) {
        yarnCluster[0] = MiniYarn.start(defaultFs, yarnMemoryMb);
      }
      if (!MiniYarn.waitForNode(yarnCluster[0], 60_000)) {
        System.err.println("MiniHdfs: the NodeManager did not register within 60 s");
        System.exit(1);
      }
      MiniYarn.serveResourceManagerWebApp(yarnCluster[0]);
      writeAtomically(
          new File(readyFile + ".yarn"),
          MiniYarn.rmAddress(yarnCluster[0]) + " " + MiniYarn.webAddress(yarnCluster[0]) + "\n");
      System.err.println(
          "MiniHdfs: YARN ready: ResourceManager " + MiniYarn.rmAddress(yarnCluster[0])
              + ", web " + MiniYarn.webAddress(yarnCluster[0]));
    }
    if (confDir != null) {
      MiniYarn.writeClientConf(new File(confDir), defaultFs, yarnCluster[0]);
    }
    writeAtomically(new File(readyFile), "127.0.0.1:" + rpcPort + " " + httpPort + "\n");
    System.err.println("MiniHdfs: ready: hdfs://127.0.0.1:" + rpcPort + " http port " + httpPort);

    if (watchStdin) {
      Thread watcher =
          new Thread(
              () -> {
                try {
                  InputStream in = System.in;
                  byte[] buffer = new byte[256];
                  while (in.read(buffer) >= 0) {
                    // Input is ignored; only its end matters.
                  }
                } catch (IOException e) {
                  // A broken stdin means the same as EOF: our parent is gone.
                }
                System.err.println("MiniHdfs: stdin closed, stopping");
                stop.countDown();
              });
      watcher.setDaemon(true);
      watcher.start();
    }
    if (!stop.await(maxSeconds, TimeUnit.SECONDS)) {
      System.err.println("MiniHdfs: --max-seconds " + maxSeconds + " reached, stopping");
    }
    System.exit(0);  // runs the shutdown hook
  }

  private static void writeAtomically(File target, String text) throws IOException {
    File temp = new File(target.getPath() + ".tmp");
    Files.write(temp.toPath(), text.getBytes(StandardCharsets.UTF_8));
    Files.move(temp.toPath(), target.toPath(), StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
  }
}
