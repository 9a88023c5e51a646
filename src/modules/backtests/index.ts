import { feature } from "../../platform/app-types.js";
import { backtestsCli } from "./backtests.cli.js";
import { backtestsConsole } from "./backtests.console.js";
import { backtestsRoutes } from "./backtests.routes.js";
import { backtestWorkers } from "./backtests.runner.js";

/**
 * Backtests: a candidate workflow version run over past cases before it is published (contract
 * section 8, decision 0027). Its job runs on a worker of its own in each worker process.
 */
export const backtestsModule = feature("backtests", {
  tables: ["backtests", "backtest_cases"],
  routes: backtestsRoutes,
  background: backtestWorkers,
  cli: backtestsCli,
  console: backtestsConsole,
});

export {
  /** The limits of backtests: running at once, window, sample, page sizes. */
  BACKTEST_LIMITS,
} from "./backtests.service.js";
