/**
 * Durable jobs in the database. A job is enqueued inside the caller's transaction, so it exists
 * exactly when the change that asked for it committed. Workers in any number of processes claim
 * jobs with `FOR UPDATE SKIP LOCKED`; a claim leases the job by pushing its `run_at` forward, and
 * a worker that dies simply stops renewing, so the job becomes claimable again when the lease
 * runs out. NOTIFY wakes idle workers at once; polling is the fallback.
 */
export * from "./jobs/handlers.js";
export { deleteJob, enqueue, insertJobs, JOBS_CHANNEL, type JobSpec, notifyJobs } from "./jobs/queue.js";
export { JobWorker, settleWithin, type WorkerOptions } from "./jobs/worker.js";
