/**
 * The alert rules Prometheus evaluates in the eval: written the way operators write them, from
 * the community sets (awesome-prometheus-alerts, node-mixin, the blackbox exporter's examples, the
 * Watchdog of kube-prometheus), not fitted to the service's checks. Only `for:` is shortened
 * (30 s instead of minutes) so that a run takes minutes, not hours; the windows are the rules' own.
 */

/** Every rule, with the always-firing Watchdog unless `watchdog` is false (the heartbeat scenario reloads the file without it). */
export function rulesYaml(o: { watchdog: boolean }): string {
  const watchdog = `  - name: meta
    rules:
      # kube-prometheus: "An alert that should always be firing to certify that Alertmanager is working properly."
      - alert: Watchdog
        expr: vector(1)
        labels:
          severity: none
        annotations:
          summary: Alerting pipeline heartbeat
`;
  return `groups:
${o.watchdog ? watchdog : ''}  - name: availability
    rules:
      # awesome-prometheus-alerts: PrometheusTargetMissing (probes are judged by probe_success).
      - alert: TargetDown
        expr: up{job!="blackbox"} == 0
        for: 30s
        labels:
          severity: critical
        annotations:
          summary: 'Prometheus target missing (instance {{ $labels.instance }})'
      # blackbox exporter: BlackboxProbeFailed.
      - alert: BlackboxProbeFailed
        expr: probe_success == 0
        for: 30s
        labels:
          severity: critical
        annotations:
          summary: 'Blackbox probe failed (instance {{ $labels.instance }})'
      # A process restarting again and again (a crash loop under a supervisor).
      - alert: ProcessCrashLooping
        expr: changes(process_start_time_seconds{job!="node"}[2m]) >= 3
        for: 30s
        labels:
          severity: critical
        annotations:
          summary: '{{ $labels.job }} restarted {{ $value }} times in 2 minutes'
  - name: http
    rules:
      # awesome-prometheus-alerts: the 5xx share of requests, over 1 minute.
      - alert: HighErrorRate
        expr: sum by (job) (rate(http_requests_total{code=~"5.."}[1m])) / sum by (job) (rate(http_requests_total[1m])) > 0.05
        for: 30s
        labels:
          severity: critical
        annotations:
          summary: '{{ $labels.job }}: {{ $value | humanizePercentage }} of requests fail'
      - alert: ErrorRateElevated
        expr: sum by (job) (rate(http_requests_total{code=~"5.."}[1m])) / sum by (job) (rate(http_requests_total[1m])) > 0.01
        for: 30s
        labels:
          severity: warning
        annotations:
          summary: '{{ $labels.job }}: {{ $value | humanizePercentage }} of requests fail'
      - alert: HighLatencyP99
        expr: histogram_quantile(0.99, sum by (job, le) (rate(http_request_duration_seconds_bucket[1m]))) > 0.5
        for: 30s
        labels:
          severity: warning
        annotations:
          summary: '{{ $labels.job }}: p99 latency {{ $value | humanizeDuration }}'
  - name: node
    rules:
      # awesome-prometheus-alerts: HostOutOfDiskSpace.
      - alert: HostOutOfDiskSpace
        expr: (node_filesystem_avail_bytes * 100) / node_filesystem_size_bytes < 10 and on (instance, device, mountpoint) node_filesystem_readonly == 0
        for: 30s
        labels:
          severity: warning
        annotations:
          summary: 'Host out of disk space (instance {{ $labels.instance }}, {{ $labels.mountpoint }})'
  # --- issue 26, part C: Redis and RabbitMQ (awesome-prometheus-alerts; the nginx backend alerts as TargetDown) ---
  - name: servers
    rules:
      # awesome-prometheus-alerts: RedisOutOfConfiguredMaxmemory.
      - alert: RedisOutOfConfiguredMaxmemory
        expr: redis_memory_used_bytes / redis_memory_max_bytes * 100 > 90 and on (instance) redis_memory_max_bytes > 0
        for: 30s
        labels:
          severity: warning
        annotations:
          summary: 'Redis out of configured maxmemory (instance {{ $labels.instance }})'
      # awesome-prometheus-alerts: RabbitmqNoConsumer (per-queue series: queue set).
      - alert: RabbitmqNoConsumer
        expr: rabbitmq_queue_consumers{queue!=""} == 0
        for: 30s
        labels:
          severity: critical
        annotations:
          summary: 'RabbitMQ queue {{ $labels.queue }} has no consumer'
      # A transaction left idle in transaction holds its locks (prometheus-postgres-exporter's
      # pg_stat_activity_max_tx_duration; the PostgreSQL pack's live fault, issue 26).
      - alert: PostgresqlIdleInTransaction
        expr: max by (job, instance, datname) (pg_stat_activity_max_tx_duration{state="idle in transaction"}) > 30
        for: 30s
        labels:
          severity: warning
        annotations:
          summary: 'PostgreSQL: a transaction idle in transaction for {{ $value }} s (instance {{ $labels.instance }})'
      # InnoDB transactions waiting on row locks now (prometheus-mysqld-exporter's global status).
      - alert: MysqlInnodbRowLockWaits
        expr: mysql_global_status_innodb_row_lock_current_waits > 0
        for: 30s
        labels:
          severity: warning
        annotations:
          summary: 'MySQL: {{ $value }} InnoDB transactions waiting on a row lock (instance {{ $labels.instance }})'
  - name: catalog
    rules:
      # A team's own rule, set too tight: the catalog is healthy, and this fires all the same.
      - alert: CatalogTrafficHigh
        expr: sum by (job) (rate(http_requests_total{job="catalog"}[1m])) > 2
        for: 30s
        labels:
          severity: warning
        annotations:
          summary: 'catalog serves {{ $value }} requests/s'
${HOST_AND_BLACKBOX_RULES}`;
}

/**
 * The host and blackbox packs' faults (issue 26): awesome-prometheus-alerts' certificate rules
 * (their own `for: 0m`), and a read-only filesystem rule as operators write it (the community
 * sets have none; this is the common `FilesystemReadOnly` shape).
 */
const HOST_AND_BLACKBOX_RULES = `  - name: certificates
    rules:
      - alert: BlackboxSslCertificateWillExpireSoon
        expr: 3 <= round((last_over_time(probe_ssl_earliest_cert_expiry[10m]) - time()) / 86400, 0.1) < 20
        for: 0m
        labels:
          severity: warning
        annotations:
          summary: 'Blackbox SSL certificate will expire soon (instance {{ $labels.instance }})'
      - alert: BlackboxSslCertificateExpired
        expr: round((last_over_time(probe_ssl_earliest_cert_expiry[10m]) - time()) / 86400, 0.1) < 0
        for: 0m
        labels:
          severity: critical
        annotations:
          summary: 'Blackbox SSL certificate expired (instance {{ $labels.instance }})'
  - name: node-filesystems
    rules:
      - alert: NodeFilesystemReadonly
        expr: node_filesystem_readonly{fstype!~"squashfs|iso9660"} > 0
        for: 30s
        labels:
          severity: critical
        annotations:
          summary: 'Filesystem mounted read-only (instance {{ $labels.instance }}, {{ $labels.mountpoint }})'
`;
