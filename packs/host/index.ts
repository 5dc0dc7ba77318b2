import type { PackPlugin } from '../../host/plugins/contract.ts';
import { clockUnsynchronised } from './causes/clock-unsynchronised.ts';
import { cpuSaturated } from './causes/cpu-saturated.ts';
import { diskIoSaturated } from './causes/disk-io-saturated.ts';
import { fdExhausted } from './causes/fd-exhausted.ts';
import { filesystemReadonly } from './causes/filesystem-readonly.ts';
import { inodesExhausted } from './causes/inodes-exhausted.ts';
import { networkErrors } from './causes/network-errors.ts';
import { oomKill } from './causes/oom-kill.ts';
import { systemdUnitFailed } from './causes/systemd-unit-failed.ts';

/**
 * The `host` pack: what node_exporter can prove or rule out about the Linux hosts a service runs
 * on, read-only through the metrics connector the estate links to the service. One file per
 * cause in `causes/`, scenarios in `scenarios/`, what each reads and decides in README.md.
 */
const pack: PackPlugin = {
  causes: [cpuSaturated, oomKill, inodesExhausted, filesystemReadonly, diskIoSaturated, networkErrors, clockUnsynchronised, systemdUnitFailed, fdExhausted],
};

export default pack;
