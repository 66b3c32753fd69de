<?php

// One load client of FpmTest: sends COUNT requests to BASE_URL, request i
// going to route ROUTES[(FIRST + i) % n], each on a new connection. Prints
// {"pids": [...], "failures": [...]} as JSON.
// Usage: php client.php BASE_URL FIRST COUNT ROUTE...

declare(strict_types=1);

[, $base, $first, $count] = $argv;
$routes = array_slice($argv, 4);
$pids = [];
$failures = [];
$context = stream_context_create(['http' => ['timeout' => 20, 'ignore_errors' => true]]);
for ($i = 0; $i < (int) $count; $i++) {
    $route = $routes[((int) $first + $i) % count($routes)];
    $body = @file_get_contents($base . $route, false, $context);
    $status = isset($http_response_header[0]) ? (int) explode(' ', $http_response_header[0])[1] : 0;
    if ($body === false || $status !== 200 || !ctype_digit(trim($body))) {
        $failures[] = "$route: status $status: " . substr((string) $body, 0, 200);
        continue;
    }
    $pids[(int) trim($body)] = true;
}
echo json_encode(['pids' => array_keys($pids), 'failures' => $failures]), "\n";
