<?php

// Opens a store, counts once, then forks N children that each count and
// observe M times and set an "all"-mode gauge to their pid, all at once
// (a pipe holds them until every child has written). Prints the children's
// pids as JSON. Usage: php fork.php STORE N M

declare(strict_types=1);

require dirname(__DIR__, 2) . '/autoload.php';

use Shmetrics\CollectorRegistry;

[, $path, $n, $m] = $argv;
$reg = new CollectorRegistry($path, false);
$counter = $reg->registerCounter('', 'forked', 'Counted before and after fork.');
$hist = $reg->registerHistogram('', 'forked_seconds', 'Observed in children.');
$gauge = $reg->registerGauge('', 'forked_pid', 'Each child sets its pid.', [], 'all');
$counter->inc();

[$release, $hold] = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
[$doneRead, $doneWrite] = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
$pids = [];
for ($i = 0; $i < (int) $n; $i++) {
    $pid = pcntl_fork();
    if ($pid === -1) {
        fwrite(STDERR, "fork failed\n");
        exit(1);
    }
    if ($pid === 0) {
        fclose($release);
        for ($j = 0; $j < (int) $m; $j++) {
            $counter->inc();
            $hist->observe(0.01);
        }
        $gauge->set(getmypid());
        fwrite($doneWrite, 'x');
        fread($hold, 1);  // stay alive until the parent lets go: all children live at once
        posix_kill(getmypid(), SIGKILL);  // leave without PHP's shutdown, as a killed worker does
    }
    $pids[] = $pid;
}
fclose($hold);
$done = 0;
while ($done < (int) $n && ($got = fread($doneRead, (int) $n - $done)) !== false && $got !== '') {
    $done += strlen($got);
}
fclose($release);
foreach ($pids as $pid) {
    pcntl_waitpid($pid, $status);
}
echo json_encode($pids), "\n";
