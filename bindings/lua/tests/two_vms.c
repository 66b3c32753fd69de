/*
 * Two Lua VMs in one process, as one nginx worker runs them for its
 * `http` and `stream` subsystems (Kong, APISIX), and a third made after
 * them, as a reloaded (HUP) master makes for its new workers. Each loads
 * tests/two_vms.lua, which defines step(name); this host runs the steps
 * of the VMs interleaved in one fixed order. Run by scripts/lua-tests.sh
 * under valgrind: a handle freed by one VM under another is an invalid
 * read there, not a silent pass.
 *
 *   two_vms SCRIPT        (SHMETRICS_LIBRARY and SHMETRICS_BIN as for unit.lua)
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>

static const char *script;

static lua_State *vm(const char *name) {
    lua_State *L = luaL_newstate();
    if (L == NULL) {
        fprintf(stderr, "two_vms: no memory for a Lua VM\n");
        exit(2);
    }
    luaL_openlibs(L);
    lua_pushstring(L, name);
    lua_setglobal(L, "VM");
    if (luaL_dofile(L, script) != 0) {
        fprintf(stderr, "two_vms: %s: %s\n", name, lua_tostring(L, -1));
        exit(1);
    }
    return L;
}

static void step(lua_State *L, const char *name) {
    lua_getglobal(L, "step");
    lua_pushstring(L, name);
    if (lua_pcall(L, 1, 0, 0) != 0) {
        fprintf(stderr, "two_vms: step %s: %s\n", name, lua_tostring(L, -1));
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: two_vms SCRIPT\n");
        return 2;
    }
    script = argv[1];
    lua_State *http = vm("http"), *stream = vm("stream");
    step(http, "init");
    step(stream, "init");
    step(http, "inc");
    step(stream, "inc");
    /* Another file moves over the path; the http VM follows it first. */
    step(http, "replace");
    step(http, "follow");
    /* The stream VM still writes through the old handle until it follows. */
    step(stream, "inc");
    step(stream, "follow");
    step(http, "inc");
    step(stream, "inc");
    step(stream, "inc");
    step(http, "check_after_follow");
    /* A reload: the file is replaced again, and the master's new VM must
     * get the new file's handle at init, before any follow. */
    step(http, "replace");
    lua_State *reloaded = vm("reloaded");
    step(reloaded, "init");
    step(reloaded, "inc");
    step(reloaded, "check_after_reload");
    lua_close(reloaded);
    lua_close(stream);
    lua_close(http);
    printf("two VMs: 0 failed\n");
    return 0;
}
