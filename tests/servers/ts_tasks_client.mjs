// The official TypeScript SDK's Client as the requestor of 2025-11-25 tasks, against an mcp_ref server.
//
//     MCP_TS_SDK=/path/to/node_modules/@modelcontextprotocol/sdk node ts_tasks_client.mjs COMMAND [ARG ...]
//
// Used by tests/interop/test_interop_ts_client_tasks.py.  MCP_TS_SDK is the SDK package's directory (1.x,
// with client.experimental.tasks); COMMAND is the server (tests/servers/tasks_server.py, usually
// behind tests/servers/stdio_proxy.py so that the test sees the traffic).  The client declares the
// elicitation capability (it accepts: {confirm: true}, or the name "Ada"), connects over stdio,
// drives the server's tasks, and prints one JSON object: what it saw.  Every request has a timeout,
// and the whole run a watchdog (MCP_TS_DEADLINE_MS, default 30000): past it the script prints what
// it saw so far, with "fatal", and exits 2.

import path from 'node:path';
import { pathToFileURL } from 'node:url';

const SDK = process.env.MCP_TS_SDK;
const REQUEST_TIMEOUT_MS = 10000;
const DEADLINE_MS = Number(process.env.MCP_TS_DEADLINE_MS || 30000);
const report = { steps: [] };

function finish(code) {
    process.stdout.write(JSON.stringify(report) + '\n', () => process.exit(code));
}

function errorOf(error) {
    return { code: error?.code ?? null, message: String(error?.message ?? error) };
}

const watchdog = setTimeout(() => {
    report.fatal = `the scenario did not finish within ${DEADLINE_MS} ms (last step: ${report.steps.at(-1)})`;
    finish(2);
}, DEADLINE_MS);

async function main() {
    if (!SDK) throw new Error('MCP_TS_SDK (the SDK package directory) is not set');
    const load = rel => import(pathToFileURL(path.join(SDK, 'dist', 'esm', rel)).href);
    const { Client } = await load('client/index.js');
    const { StdioClientTransport } = await load('client/stdio.js');
    const types = await load('types.js');
    const RELATED = types.RELATED_TASK_META_KEY;
    const options = { timeout: REQUEST_TIMEOUT_MS };
    const [command, ...args] = process.argv.slice(2);

    const client = new Client({ name: 'ts-tasks-requestor', version: '1.0.0' },
                              { capabilities: { elicitation: { form: {} } } });
    report.elicitations = [];
    client.setRequestHandler(types.ElicitRequestSchema, async (request, extra) => {
        const params = request.params;
        const keys = Object.keys(params.requestedSchema?.properties ?? {});
        report.elicitations.push({ message: params.message, keys, meta: params._meta ?? null,
                                   extraTaskId: extra.taskId ?? null });
        return { action: 'accept', content: keys.includes('confirm') ? { confirm: true } : { name: 'Ada' } };
    });
    report.statusNotifications = [];
    const ended = new Set();  // tasks whose terminal status was notified
    let notified = () => {};
    client.setNotificationHandler(types.TaskStatusNotificationSchema, notification => {
        report.statusNotifications.push(notification.params);
        if (['completed', 'failed', 'cancelled'].includes(notification.params.status)) {
            ended.add(notification.params.taskId);
            notified();
        }
    });
    // Resolves true once every one of ids had its terminal status notified, false after ms.
    const endsNotified = async (ids, ms) => {
        const deadline = Date.now() + ms;
        while (!ids.every(id => ended.has(id))) {
            const left = deadline - Date.now();
            if (left <= 0) return false;
            let timer;
            await new Promise(resolve => { notified = resolve; timer = setTimeout(resolve, left); });
            clearTimeout(timer);
        }
        return true;
    };

    report.steps.push('connect');
    const transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
    await client.connect(transport, options);
    report.serverInfo = client.getServerVersion();
    report.taskCapability = client.getServerCapabilities()?.tasks ?? null;

    // (1) tools/list: each tool's execution.taskSupport.
    report.steps.push('list tools');
    const { tools } = await client.listTools(undefined, options);
    report.taskSupport = Object.fromEntries(tools.map(tool => [tool.name, tool.execution?.taskSupport ?? null]));

    // (2) a task-augmented call of an optional tool (compute waits until `release` is called).
    report.steps.push('compute');
    const compute = { messages: [], progress: [] };
    report.compute = compute;
    const stream = client.experimental.tasks.callToolStream(
        { name: 'compute', arguments: { n: 7 } }, undefined,
        { ...options, task: { ttl: 60000 }, onprogress: p => compute.progress.push(p) });
    for await (const message of stream) {
        compute.messages.push(message.type);
        if (message.type === 'taskCreated') {
            compute.created = message.task;
            const released = await client.callTool({ name: 'release', arguments: {} }, undefined, options);
            compute.released = released.content?.[0]?.text ?? null;
        } else if (message.type === 'taskStatus') {
            compute.statuses = [...(compute.statuses ?? []), message.task.status];
        } else if (message.type === 'result') {
            compute.text = message.result.content?.[0]?.text ?? null;
            compute.meta = message.result._meta ?? null;
        } else if (message.type === 'error') {
            compute.error = errorOf(message.error);
        }
    }
    compute.taskId = compute.created?.taskId ?? null;

    // (3) a required tool whose handler elicits during the task (three asks: one, then two at once).
    report.steps.push('confirm');
    const confirm = { messages: [], statuses: [] };
    report.confirm = confirm;
    for await (const message of client.experimental.tasks.callToolStream(
            { name: 'confirm', arguments: { filename: 'notes.txt' } }, undefined, options)) {
        confirm.messages.push(message.type);
        if (message.type === 'taskCreated') confirm.taskId = message.task.taskId;
        else if (message.type === 'taskStatus') confirm.statuses.push(message.task.status);
        else if (message.type === 'result') {
            confirm.text = message.result.content?.[0]?.text ?? null;
            confirm.meta = message.result._meta ?? null;
        } else if (message.type === 'error') confirm.error = errorOf(message.error);
    }
    report.confirmStatusAfter = (await client.experimental.tasks.getTask(confirm.taskId, options)).status;

    // (4) tasks/list holds both; tasks/cancel of a finished task is -32602; a running one is cancelled.
    report.steps.push('list and cancel');
    const listed = await client.experimental.tasks.listTasks(undefined, options);
    report.listed = listed.tasks.map(task => ({ taskId: task.taskId, status: task.status }));
    report.listedNextCursor = listed.nextCursor ?? null;
    try {
        report.cancelFinished = { result: await client.experimental.tasks.cancelTask(compute.taskId, options) };
    } catch (error) {
        report.cancelFinished = { error: errorOf(error) };
    }
    const running = await client.request({ method: 'tools/call', params: { name: 'forever', arguments: {} } },
                                         types.CreateTaskResultSchema, { ...options, task: {} });
    const forever = { taskId: running.task.taskId, created: running.task.status };
    report.forever = forever;
    forever.cancelled = (await client.experimental.tasks.cancelTask(forever.taskId, options)).status;
    forever.after = (await client.experimental.tasks.getTask(forever.taskId, options)).status;
    try {
        await client.experimental.tasks.cancelTask(forever.taskId, options);
        forever.cancelAgain = { error: null };
    } catch (error) {
        forever.cancelAgain = { error: errorOf(error) };
    }

    // (5) a required tool called without a task: the SDK's callTool refuses before sending anything;
    // sent anyway (a plain request), the server answers -32601.
    report.steps.push('required without task');
    try {
        await client.callTool({ name: 'forever', arguments: {} }, undefined, options);
        report.callToolGuard = { error: null };
    } catch (error) {
        report.callToolGuard = { error: errorOf(error) };
    }
    try {
        await client.request({ method: 'tools/call', params: { name: 'forever', arguments: {} } },
                             types.CallToolResultSchema, options);
        report.withoutTask = { error: null };
    } catch (error) {
        report.withoutTask = { error: errorOf(error) };
    }

    // (6) a task that fails (isError): the stream ends in an error; tasks/result still has the result.
    report.steps.push('tool error');
    const failed = { messages: [] };
    report.failed = failed;
    for await (const message of client.experimental.tasks.callToolStream(
            { name: 'tool_error', arguments: {} }, undefined, options)) {
        failed.messages.push(message.type);
        if (message.type === 'taskCreated') failed.taskId = message.task.taskId;
        else if (message.type === 'taskStatus') failed.status = message.task.status;
        else if (message.type === 'error') failed.error = errorOf(message.error);
    }
    const payload = await client.experimental.tasks.getTaskResult(failed.taskId, types.CallToolResultSchema, options);
    failed.payload = { isError: payload.isError ?? null, text: payload.content?.[0]?.text ?? null,
                       meta: payload._meta ?? null };

    // The status notifications (MAY) of the tasks' ends are sent after their records change: wait for them.
    report.steps.push('status notifications');
    report.endsNotified = await endsNotified([compute.taskId, confirm.taskId, forever.taskId, failed.taskId], 5000);
    report.relatedKey = RELATED;
    report.steps.push('close');
    await client.close();
    report.done = true;
}

main().then(() => { clearTimeout(watchdog); finish(0); },
            error => { clearTimeout(watchdog); report.fatal = String(error?.stack ?? error); finish(1); });
