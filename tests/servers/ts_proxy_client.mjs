// The official TypeScript SDK's Client in front of `mcp-ref proxy`: every feature the proxy carries.
//
//     MCP_TS_SDK=/path/to/node_modules/@modelcontextprotocol/sdk node ts_proxy_client.mjs URL
//     MCP_TS_SDK=... node ts_proxy_client.mjs COMMAND [ARG ...]
//
// Used by tests/proxy/test_proxy_interop.py.  A URL is served over Streamable HTTP, anything else is
// a command launched on stdio.  The client declares sampling, elicitation and roots (answering
// "ts model", the name "Ts" and the root file:///ts), calls the tools, reads a resource, gets a
// prompt, completes an argument, and prints one JSON object: what it saw.  Every request has a
// timeout, and the whole run a watchdog (MCP_TS_DEADLINE_MS, default 30000).

import path from 'node:path';
import { pathToFileURL } from 'node:url';

const SDK = process.env.MCP_TS_SDK;
const REQUEST_TIMEOUT_MS = 10000;
const DEADLINE_MS = Number(process.env.MCP_TS_DEADLINE_MS || 30000);
const report = { steps: [] };

function finish(code) {
    process.stdout.write(JSON.stringify(report) + '\n', () => process.exit(code));
}

setTimeout(() => {
    report.fatal = `the scenario did not finish within ${DEADLINE_MS} ms (last step: ${report.steps.at(-1)})`;
    finish(2);
}, DEADLINE_MS).unref();

async function main() {
    if (!SDK) throw new Error('MCP_TS_SDK (the SDK package directory) is not set');
    const load = rel => import(pathToFileURL(path.join(SDK, 'dist', 'esm', rel)).href);
    const { Client } = await load('client/index.js');
    const types = await load('types.js');
    const [target, ...args] = process.argv.slice(2);
    let transport;
    if (/^https?:\/\//.test(target)) {
        const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
        transport = new StreamableHTTPClientTransport(new URL(target));
    } else {
        const { StdioClientTransport } = await load('client/stdio.js');
        transport = new StdioClientTransport({ command: target, args, stderr: 'inherit' });
    }
    const client = new Client(
        { name: 'ts-proxy-client', version: '1.0.0' },
        { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
    );
    client.setRequestHandler(types.CreateMessageRequestSchema, async () => ({
        role: 'assistant',
        content: { type: 'text', text: 'ts model' },
        model: 'ts',
    }));
    client.setRequestHandler(types.ElicitRequestSchema, async () => ({
        action: 'accept',
        content: { name: 'Ts' },
    }));
    client.setRequestHandler(types.ListRootsRequestSchema, async () => ({
        roots: [{ uri: 'file:///ts' }],
    }));
    const options = { timeout: REQUEST_TIMEOUT_MS };
    report.steps.push('connect');
    await client.connect(transport, options);
    report.protocolVersion = transport.protocolVersion ?? null;
    report.server = client.getServerVersion();
    report.steps.push('tools');
    report.tools = (await client.listTools(undefined, options)).tools.map(t => t.name);
    report.echo = (await client.callTool({ name: 'echo', arguments: { text: 'ts' } }, undefined, options)).content[0].text;
    report.sum = (await client.callTool({ name: 'add', arguments: { a: 4, b: 5 } }, undefined, options)).structuredContent;
    report.steps.push('work');
    const progress = [];
    const work = await client.callTool({ name: 'work', arguments: { steps: 2 } }, undefined, {
        ...options,
        onprogress: p => progress.push(p.progress),
    });
    report.work = work.content[0].text;
    report.progress = progress;
    report.steps.push('resources');
    report.note = (await client.readResource({ uri: 'note://1' }, options)).contents[0].text;
    report.steps.push('prompts');
    report.prompt = (await client.getPrompt({ name: 'greet', arguments: { name: 'Bob' } }, options)).messages[0].content.text;
    report.steps.push('complete');
    report.completion = (await client.complete({ ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'name', value: 'A' } }, options)).completion.values;
    report.steps.push('close');
    await client.close();
    report.done = true;
}

main().then(() => finish(0), error => {
    report.fatal = String(error?.stack ?? error);
    finish(1);
});
