// ESM entry of `pidguard/abx-plugins`: `import { killChrome } from 'pidguard/abx-plugins'` or
// `import abx from 'pidguard/abx-plugins'`. The same functions as `require('pidguard/abx-plugins')`.
import { createRequire } from 'node:module';

const abx = createRequire(import.meta.url)('./abx-plugins.js');

export default abx;
export const { writePidWithMtime, writeCmdScript, isProcessAlive, killChrome, killZombieChrome } = abx;
