import type { DoctorReport } from '../host/doctor/doctor.service.ts';

/** What the running service said, or why it could not be asked. */
export type ServiceAnswer = { report: DoctorReport; problem: null } | { report: null; problem: string };

const reason = (e: unknown) => (e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e));

/**
 * Asks the running service for its own doctor report (`GET /v1/doctor?fresh=1`). Its report
 * judges the service's environment, which is what an operator asking "is ingest on?" means; the
 * CLI falls back to judging its own environment, and says so, when this answers a problem.
 */
export async function askService(base: string, token: string | null, timeoutS: number): Promise<ServiceAnswer> {
  if (token === null) {
    // Without a token the service can only say that it runs; /health is open, so say that much.
    let up = false;
    try {
      up = (await fetch(`${base}/health`, { signal: AbortSignal.timeout(timeoutS * 1000) })).ok;
    } catch {
      up = false;
    }
    return {
      report: null,
      problem: up
        ? `The service at ${base} answers, but its report (GET /v1/doctor) needs the admin token and SERVICE_ADMIN_TOKEN is unset here (pass --token)`
        : `No service answers at ${base} (and SERVICE_ADMIN_TOKEN is unset here)`,
    };
  }
  let res: Response;
  try {
    res = await fetch(`${base}/v1/doctor?fresh=1`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      signal: AbortSignal.timeout(timeoutS * 1000),
    });
  } catch (e) {
    return { report: null, problem: `No service answers at ${base} (${reason(e)})` };
  }
  if (res.status === 401 || res.status === 403)
    return {
      report: null,
      problem: `The service at ${base} refused the admin token this CLI has (${res.status}): it is another install's, or the service uses another`,
    };
  if (res.status !== 200) return { report: null, problem: `The service at ${base} answered GET /v1/doctor with ${res.status}` };
  const body = (await res.json().catch(() => null)) as DoctorReport | null;
  if (body === null || !Array.isArray(body.checks) || body.judged_by !== 'service')
    return { report: null, problem: `The service at ${base} answered GET /v1/doctor with something that is not this version's doctor report` };
  return { report: body, problem: null };
}
