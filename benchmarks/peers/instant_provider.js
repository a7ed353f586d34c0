// promptfoo custom provider for benchmarks/startup_vs_peers.py: answers at once, in process, with an
// OpenAI-style tool call to the request's expected tool (plain text when the expected answer is "none"),
// as an instant offline router would. A JavaScript file provider runs inside promptfoo's own Node process:
// no per-call subprocess or IPC (a Python provider pays both), so the figure is promptfoo's own cost per
// test -- a lower bound, which makes the comparison strict for tooleval. The 30 tools it is offered are
// read once from config.tools_file (benchmarks/peers/work.py says why they are not in the config itself).
const fs = require('fs');

class InstantToolCaller {
  constructor(options = {}) {
    this.providerId = options.id || 'instant-tool-caller';
    this.config = options.config || {};
    this.tools = this.config.tools_file ? JSON.parse(fs.readFileSync(this.config.tools_file, 'utf8')) : [];
  }

  id() {
    return this.providerId;
  }

  async callApi(prompt, context) {
    const expected = context && context.vars ? context.vars.expected : 'none';
    const tokenUsage = { total: 0, prompt: 0, completion: 0, numRequests: 1 };
    if (!expected || expected === 'none') {
      return { output: 'Could you tell me a little more about what you need?', tokenUsage };
    }
    return {
      output: [{ id: 'call_0', type: 'function', function: { name: expected, arguments: '{}' } }],
      tokenUsage,
    };
  }
}

module.exports = InstantToolCaller;
