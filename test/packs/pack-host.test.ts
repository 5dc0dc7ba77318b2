// The `host` pack against Debian's real node_exporter and Prometheus: each test starts the
// exporter with the collectors a cause reads, a Prometheus scraping it every second, makes the
// fault for real where this machine allows it (a read-only remount and inodes used up on a tmpfs
// of the test's own, an OOM kill in a memory cgroup of its own, packets dropped on a veth pair in
// a network namespace of its own, a loop device kept busy, a process at its descriptor limit),
// and runs the cause as an investigation does (test/helpers/pack-live.ts). Where no real
// condition can be made on a shared machine (its whole CPU, its kernel's file handles, its clock,
// systemd, which does not run here), the exporter reads files of the test's own through the same
// collector (`--path.procfs`) or its textfile collector, and the test says so.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import { NodeHost } from '../eval/node-host.ts';
import { makeOperating, startApp } from '../helpers/app.ts';
import { loopDisk, loopMissing, netns, netnsMissing, oomKill, oomMissing } from '../helpers/host-faults.ts';
import { filesDir, nodeExporterTest, startNodeExporter } from '../helpers/node-exporter.ts';
import { check, rerun, service, untilPrometheus, workload } from '../helpers/pack-live.ts';
import { PROMETHEUS_BIN, startPrometheus } from '../helpers/prometheus.ts';
import { tmpfsMissing } from '../helpers/tmpfs.ts';
import { waitFor } from '../helpers/wait.ts';
import { existsSync } from 'node:fs';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const prometheusMissing = existsSync(PROMETHEUS_BIN) ? null : `${PROMETHEUS_BIN} not found (apt-get install prometheus)`;
const missing = (...why: Array<string | null>) => why.find((w) => w !== null) ?? null;

/** Prometheus scraping `targets` as job `node`, once each has been scraped; and the service linked to them. */
async function nodes(t: ExecutionContext, targets: string[]) {
  const prom = await startPrometheus(t, { jobs: [{ job: 'node', targets }] });
  await untilPrometheus(prom.base, 'up{job="node"} == 1', (s) => s.length === targets.length);
  const svc = (target: string) => service('orders', [workload(`job="node", instance="${target}"`)]);
  return { base: prom.base, svc };
}

nodeExporterTest(
  missing(prometheusMissing, tmpfsMissing),
  'host/inodes-exhausted and host/filesystem-readonly: a tmpfs of its own, ruled out while writable with inodes free; inodes used up, then remounted read-only, for real',
  async (t) => {
    const host = new NodeHost(t, 'inodes');
    await host.start(0.1, { inodes: 1000 });
    const { base, svc } = await nodes(t, [host.target]);
    const orders = svc(host.target);

    const roomy = await check(base, 'host/inodes-exhausted', orders);
    t.is(roomy.verdict, 'ruled_out', roomy.reason);
    const writable = await check(base, 'host/filesystem-readonly', orders);
    t.is(writable.verdict, 'ruled_out', writable.reason);
    t.regex(writable.reason, /the one filesystem of a writable type .* is mounted read-write/);

    host.useInodes(0.02);
    await untilPrometheus(base, 'node_filesystem_files_free{mountpoint="/srv"} / node_filesystem_files{mountpoint="/srv"} < 0.05', (s) => s.length === 1);
    const used = await check(base, 'host/inodes-exhausted', orders);
    t.is(used.verdict, 'holds', used.reason);
    t.true(used.reason.includes(`${host.target}:/srv (`) && used.reason.includes('of inodes free'), used.reason);
    t.like(used.evidence[0], { observed: { at_risk: 1, total: 1, threshold: 0.05 } });

    host.readOnly();
    await untilPrometheus(base, 'node_filesystem_readonly{mountpoint="/srv"} == 1', (s) => s.length === 1);
    const ro = await check(base, 'host/filesystem-readonly', orders);
    t.is(ro.verdict, 'holds', ro.reason);
    t.true(ro.reason.startsWith(`${host.target}:/srv (tmpfs on eval-inodes) is mounted read-only`), ro.reason);
    t.like(ro.verification, { cause: 'host/filesystem-readonly', expect: 'ruled_out' });
    const again = await rerun(base, ro.evidence[0]!.query, ro.evidence[0]!.at);
    t.deepEqual(
      again.map((s) => s.value),
      [1],
      'the evidence re-run at its moment gives the verdict its number',
    );
    // A read-only filesystem is left out of the inode count, as prometheus/disk-full leaves it out of bytes.
    const left = await check(base, 'host/inodes-exhausted', orders);
    t.like(left, { verdict: 'unknown', obstacle: "the data isn't there" });
    // A mount point the operator keeps read-only on purpose.
    const ignored = await check(base, 'host/filesystem-readonly', orders, { settings: { ignore_mountpoints: '/srv' } });
    t.like(ignored, { verdict: 'unknown', obstacle: "the data isn't there" });
  },
);

nodeExporterTest(
  missing(prometheusMissing, oomMissing),
  'host/oom-kill: ruled out before, holds once the kernel OOM-kills a process in a memory cgroup, for real',
  async (t) => {
    const { target } = await startNodeExporter(t, ['vmstat']);
    const { base, svc } = await nodes(t, [target]);
    const orders = svc(target);
    await untilPrometheus(base, 'count_over_time(node_vmstat_oom_kill[1m]) >= 2', (s) => s.length === 1);
    const openedAt = new Date(Date.now() - 60_000).toISOString();
    const before = await check(base, 'host/oom-kill', orders, { openedAt });
    t.is(before.verdict, 'ruled_out', before.reason);
    t.regex(before.evidence[0]!.query, /^increase\(node_vmstat_oom_kill\{job="node",instance="127\.0\.0\.1:\d+"\}\[\d+s\]\)$/);

    const first = await rerun(base, 'node_vmstat_oom_kill', new Date().toISOString());
    t.is(await oomKill(), 'SIGKILL', 'the kernel killed the process');
    await untilPrometheus(base, 'node_vmstat_oom_kill', (s) => s.length === 1 && s[0]!.value > first[0]!.value);
    await untilPrometheus(base, `increase(node_vmstat_oom_kill[2m]) > 0`, (s) => s.length === 1);
    const after = await check(base, 'host/oom-kill', orders, { openedAt });
    t.is(after.verdict, 'holds', after.reason);
    t.true(after.reason.includes(`${target} (`) && /\d+ OOM kills?\)/.test(after.reason), after.reason);
    t.deepEqual(after.subjects, [target]);
  },
);

nodeExporterTest(
  missing(prometheusMissing, netnsMissing),
  'host/network-errors: traffic on a veth pair in a namespace of its own is ruled out, holds once the far end goes down and every packet is dropped, for real',
  async (t) => {
    const ns = await netns(t);
    const { target } = await startNodeExporter(t, ['netdev'], ['--no-collector.netdev.netlink', `--path.procfs=/proc/${ns.pid}`]);
    const { base, svc } = await nodes(t, [target]);
    const orders = svc(target);
    await untilPrometheus(base, 'rate(node_network_transmit_packets_total{device="hp0"}[5s]) > 10', (s) => s.length === 1);
    const flowing = await check(base, 'host/network-errors', orders, { settings: { window: '10s' } });
    t.is(flowing.verdict, 'ruled_out', flowing.reason);

    ns.peerDown();
    await untilPrometheus(base, 'rate(node_network_transmit_drop_total{device="hp0"}[10s]) > 10', (s) => s.length === 1);
    await untilPrometheus(base, 'increase(node_network_transmit_packets_total{device="hp0"}[10s]) == 0', (s) => s.length === 1);
    const dropping = await check(base, 'host/network-errors', orders, { settings: { window: '10s' } });
    t.is(dropping.verdict, 'holds', dropping.reason);
    t.true(dropping.reason.includes(`${target}:hp0 (`), dropping.reason);
  },
);

nodeExporterTest(
  missing(prometheusMissing, loopMissing),
  'host/disk-io-saturated: an idle loop device is ruled out, holds once writers keep it busy, for real (over the alert’s own 15 s window)',
  async (t) => {
    const disk = loopDisk(t);
    const { target } = await startNodeExporter(
      t,
      ['diskstats'],
      ['--collector.diskstats.device-exclude=', `--collector.diskstats.device-include=^${disk.device}$`],
    );
    const { base, svc } = await nodes(t, [target]);
    const orders = svc(target);
    // The alert that fired reads 15 s: the check reads what it saw (ctx.lib.prometheus.alertWindow).
    const alert = {
      fingerprint: 'io',
      name: 'NodeDiskIOSaturation',
      severity: 'warning' as const,
      status: 'firing',
      labels: { instance: target, device: disk.device },
      summary: '',
      joined_at: new Date().toISOString(),
      baseline: { first_seen: '', last_seen: '', firings_7d: 1, firings_30d: 1, flapping: false },
      starts_at: null,
      expression: 'rate(node_disk_io_time_seconds_total[15s]) > 0.5',
    };
    // A loop device on this shared machine keeps requests in flight about 80 % of the time (the
    // writers wait for a loaded CPU between requests), so the threshold is the alert's 50 %.
    const settings = { busy_ratio: 0.5 };
    await untilPrometheus(base, `count_over_time(node_disk_io_time_seconds_total{device="${disk.device}"}[15s]) >= 2`, (s) => s.length === 1);
    const idle = await check(base, 'host/disk-io-saturated', orders, { settings, signals: [alert] });
    t.is(idle.verdict, 'ruled_out', idle.reason);
    t.regex(idle.evidence[0]!.query, new RegExp(`^rate\\(node_disk_io_time_seconds_total\\{job="node",instance="${target}"\\}\\[15s\\]\\)$`));

    disk.busy(3);
    await untilPrometheus(base, `rate(node_disk_io_time_seconds_total{device="${disk.device}"}[15s]) > 0.5`, (s) => s.length === 1, 60_000);
    const busy = await check(base, 'host/disk-io-saturated', orders, { settings, signals: [alert] });
    await disk.stop();
    t.is(busy.verdict, 'holds', busy.reason);
    t.true(busy.reason.includes(`${target}:${disk.device} (busy `), busy.reason);
  },
);

/** /proc/stat as the kernel writes it, for CPUs spending `busy` of their time in user mode since `since` (USER_HZ 100). */
function procStat(cpus: number, busy: number, since: number): string {
  const ticks = Math.round(((Date.now() - since) / 1000) * 100);
  const user = Math.round(ticks * busy);
  const idle = ticks - user;
  const line = (name: string, n: number) => `${name} ${user * n} 0 0 ${idle * n} 0 0 0 0 0 0`;
  return [
    line('cpu ', cpus),
    ...Array.from({ length: cpus }, (_, i) => line(`cpu${i}`, 1)),
    'intr 0',
    'ctxt 0',
    `btime ${Math.floor(since / 1000)}`,
    'processes 1',
    'procs_running 1',
    'procs_blocked 0',
    '',
  ].join('\n');
}

nodeExporterTest(
  prometheusMissing,
  "host/cpu-saturated: node_exporter's cpu collector on a /proc/stat of the test's own (this machine's CPUs are shared): a host at 50 % is ruled out, one at 97 % holds",
  async (t) => {
    const since = Date.now() - 3600_000;
    const calm = filesDir(t);
    const hot = filesDir(t);
    const write = () => {
      calm.write('stat', procStat(2, 0.5, since));
      hot.write('stat', procStat(2, 0.97, since));
    };
    write();
    const timer = setInterval(write, 100);
    t.teardown(() => clearInterval(timer));
    const a = await startNodeExporter(t, ['cpu'], [`--path.procfs=${calm.dir}`]);
    const b = await startNodeExporter(t, ['cpu'], [`--path.procfs=${hot.dir}`]);
    const { base, svc } = await nodes(t, [a.target, b.target]);
    await untilPrometheus(base, 'count_over_time(node_cpu_seconds_total{mode="idle",cpu="0"}[1m]) >= 3', (s) => s.length === 2);

    const ok = await check(base, 'host/cpu-saturated', svc(a.target));
    t.is(ok.verdict, 'ruled_out', ok.reason);
    t.is(
      ok.evidence[0]!.query,
      `1 - sum without (cpu, mode) (rate(node_cpu_seconds_total{job="node",instance="${a.target}",mode=~"idle|iowait|steal"}[5m])) / sum without (cpu, mode) (rate(node_cpu_seconds_total{job="node",instance="${a.target}"}[5m]))`,
    );
    const saturated = await check(base, 'host/cpu-saturated', svc(b.target));
    t.is(saturated.verdict, 'holds', saturated.reason);
    const busy = (saturated.evidence[0]!.observed as { series: Array<{ busy: number }> }).series[0]!.busy;
    t.true(busy > 0.95 && busy < 0.99, String(busy));
    const again = await rerun(base, saturated.evidence[0]!.query, saturated.evidence[0]!.at);
    t.is(Number(again[0]!.value.toPrecision(6)), busy, 'the evidence re-run at its moment gives the verdict its number');
  },
);

nodeExporterTest(
  prometheusMissing,
  "host/clock-unsynchronised: the machine's real clock state as the timex collector reads it, and both states through the textfile collector",
  async (t) => {
    // The machine's own kernel: the verdict must agree with what node_exporter says of it.
    const real = await startNodeExporter(t, ['timex']);
    const files = filesDir(t);
    files.write('timex.prom', 'node_timex_sync_status 1\nnode_timex_offset_seconds 0.001\n');
    const text = await startNodeExporter(t, ['textfile'], [`--collector.textfile.directory=${files.dir}`]);
    const { base, svc } = await nodes(t, [real.target, text.target]);
    const own = await fetch(`http://${real.target}/metrics`).then((r) => r.text());
    const synced = /^node_timex_sync_status 1$/m.test(own);
    const offset = Number(/^node_timex_offset_seconds (\S+)$/m.exec(own)?.[1] ?? 'NaN');
    const machine = await check(base, 'host/clock-unsynchronised', svc(real.target));
    t.is(
      machine.verdict,
      synced && Math.abs(offset) <= 0.05 ? 'ruled_out' : 'holds',
      `${machine.reason} (the kernel: ${synced ? 'synchronised' : 'not synchronised'}, offset ${offset} s)`,
    );

    const fine = await check(base, 'host/clock-unsynchronised', svc(text.target));
    t.is(fine.verdict, 'ruled_out', fine.reason);
    files.write('timex.prom', 'node_timex_sync_status 1\nnode_timex_offset_seconds -0.2\n');
    await untilPrometheus(base, `node_timex_offset_seconds{instance="${text.target}"} < -0.1`, (s) => s.length === 1);
    const off = await check(base, 'host/clock-unsynchronised', svc(text.target));
    t.is(off.verdict, 'holds', off.reason);
    t.true(off.reason.includes(`off its time source by more than 50 ms on ${text.target} (-200 ms)`), off.reason);
    files.write('timex.prom', 'node_timex_sync_status 0\nnode_timex_offset_seconds 0\n');
    await untilPrometheus(base, `node_timex_sync_status{instance="${text.target}"} == 0`, (s) => s.length === 1);
    const unsynced = await check(base, 'host/clock-unsynchronised', svc(text.target));
    t.is(unsynced.verdict, 'holds', unsynced.reason);
    t.true(unsynced.reason.includes(`not synchronised on ${text.target}`), unsynced.reason);
  },
);

nodeExporterTest(
  prometheusMissing,
  'host/systemd-unit-failed: through the textfile collector (systemd does not run on this machine): ruled out while every unit is active, holds naming the failed one',
  async (t) => {
    const files = filesDir(t);
    const units = (orders: 'active' | 'failed') =>
      ['active', 'failed']
        .flatMap((state) => [
          `node_systemd_unit_state{name="orders.service",state="${state}",type="simple"} ${state === orders ? 1 : 0}`,
          `node_systemd_unit_state{name="chronyd.service",state="${state}",type="forking"} ${state === 'active' ? 1 : 0}`,
        ])
        .join('\n') + '\n';
    files.write('systemd.prom', units('active'));
    const { target } = await startNodeExporter(t, ['textfile'], [`--collector.textfile.directory=${files.dir}`]);
    const { base, svc } = await nodes(t, [target]);
    const fine = await check(base, 'host/systemd-unit-failed', svc(target));
    t.is(fine.verdict, 'ruled_out', fine.reason);
    files.write('systemd.prom', units('failed'));
    await untilPrometheus(base, 'node_systemd_unit_state{state="failed"} == 1', (s) => s.length === 1);
    const failed = await check(base, 'host/systemd-unit-failed', svc(target));
    t.is(failed.verdict, 'holds', failed.reason);
    t.true(failed.reason.startsWith(`systemd reports orders.service on ${target} failed`), failed.reason);
    // The service's own units only: another unit's failure is not its.
    const narrowed = await check(base, 'host/systemd-unit-failed', svc(target), { settings: { units: 'chronyd.*' } });
    t.is(narrowed.verdict, 'ruled_out', narrowed.reason);
  },
);

nodeExporterTest(
  prometheusMissing,
  "the host pack runs in the app (POST /v1/checks/run) through a saved prometheus connector, the estate's workload link and a check_settings text setting",
  async (t) => {
    const files = filesDir(t);
    files.write(
      'systemd.prom',
      'node_systemd_unit_state{name="backup.service",state="failed",type="oneshot"} 1\nnode_systemd_unit_state{name="orders.service",state="failed",type="simple"} 0\n',
    );
    const { target } = await startNodeExporter(t, ['textfile'], [`--collector.textfile.directory=${files.dir}`]);
    const { base } = await nodes(t, [target]);
    const ta = await startApp(t);
    await makeOperating(ta);
    t.is((await ta.call('PUT', '/v1/connectors/metrics', { body: { kind: 'prometheus', settings: { url: base } } })).status, 201);
    const estate = (units: string | null) =>
      ta.call('PUT', '/v1/estate/overrides', {
        body: {
          services: {
            orders: {
              links: [{ kind: 'workload', match: `job="node", instance="${target}"`, connector: 'metrics' }],
              ...(units === null ? {} : { check_settings: { 'host/systemd-unit-failed': { units } } }),
            },
          },
        },
      });
    const verdict = async () => {
      const run = await ta.call('POST', '/v1/checks/run', { body: { service: 'orders', at: new Date().toISOString() } });
      t.is(run.status, 200, JSON.stringify(run.body));
      return run.body.verdicts.find((v: any) => v.cause === 'host/systemd-unit-failed');
    };
    t.true([200, 201].includes((await estate(null)).status));
    t.like(await verdict(), { verdict: 'holds' }, 'backup.service failed on the host');
    t.true([200, 201].includes((await estate('orders.*')).status));
    t.like(await verdict(), { verdict: 'ruled_out' }, "the estate narrows the check to the service's own units");
    // A setting of another type than its default is refused by the estate, naming it.
    const wrong = await ta.call('PUT', '/v1/estate/overrides', {
      body: { services: { orders: { check_settings: { 'host/systemd-unit-failed': { units: 3 } } } } },
    });
    t.is(wrong.status, 400, JSON.stringify(wrong.body));
  },
);

nodeExporterTest(
  prometheusMissing,
  "host/fd-exhausted: a real process at its descriptor limit (prom-client's process metrics, ulimit -n 64) holds; the kernel's file handles through a /proc of the test's own",
  async (t) => {
    // A node process exporting the client library's default process metrics, its limit 64 descriptors.
    const script = `
      const client = require('prom-client'); client.collectDefaultMetrics();
      const fs = require('node:fs'); const held = [];
      require('node:http').createServer(async (req, res) => {
        if (req.url.startsWith('/open')) {
          while (fs.readdirSync('/proc/self/fd').length < Number(req.url.split('=')[1])) held.push(fs.openSync('/dev/null', 'r'));
          res.end(String(held.length)); return;
        }
        res.setHeader('content-type', client.register.contentType); res.end(await client.register.metrics());
      }).listen(0, '127.0.0.1', function () { console.log('port ' + this.address().port); });`;
    const app = spawn('sh', ['-c', 'ulimit -n 64 && exec "$0" -e "$1"', process.execPath, script], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
    t.teardown(() => void app.kill('SIGKILL'));
    let out = '';
    app.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const port = await waitFor('the process to listen', async () => /port (\d+)/.exec(out)?.[1]);
    const proc = filesDir(t);
    proc.write('sys/fs/file-nr', '2000\t0\t100000\n');
    const { target: nodeTarget } = await startNodeExporter(t, ['filefd'], [`--path.procfs=${proc.dir}`]);
    const prom = await startPrometheus(t, {
      jobs: [
        { job: 'orders', targets: [`127.0.0.1:${port}`] },
        { job: 'node', targets: [nodeTarget] },
      ],
    });
    await untilPrometheus(prom.base, 'up == 1', (s) => s.length === 3);
    const orders = service('orders', [workload('job="orders"'), workload(`job="node", instance="${nodeTarget}"`)]);
    const fine = await check(prom.base, 'host/fd-exhausted', orders);
    t.is(fine.verdict, 'ruled_out', fine.reason);
    t.regex(fine.reason, /\(2 processes, 1 host\)$/, 'the app and node_exporter itself export process metrics');

    await fetch(`http://127.0.0.1:${port}/open?n=60`);
    await untilPrometheus(prom.base, 'process_open_fds{job="orders"} / process_max_fds{job="orders"} > 0.9', (s) => s.length === 1);
    const near = await check(prom.base, 'host/fd-exhausted', orders);
    t.is(near.verdict, 'holds', near.reason);
    t.true(near.reason.includes(`processes at their descriptor limit: 127.0.0.1:${port} (`), near.reason);

    proc.write('sys/fs/file-nr', '95000\t0\t100000\n');
    await untilPrometheus(prom.base, 'node_filefd_allocated > 90000', (s) => s.length === 1);
    const both = await check(prom.base, 'host/fd-exhausted', orders);
    t.true(both.reason.includes(`hosts at their file handle limit (fs.file-max): ${nodeTarget} (95.0 % used)`), both.reason);
  },
);
