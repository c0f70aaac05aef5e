/* Desktop tools: the computer-use API of a sandbox with a display (execd's
 * /desktop routes). A screenshot comes back as an MCP image content block,
 * which a model can look at; the other tools return the pointer or {}. */
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/xalloc.h"
#include "mcp/mcp.h"

#define SID \
    "'sandbox_id':{'type':'string','minLength':1,'description':'Target sandbox identifier.'}"
#define XY \
    "'x':{'type':'integer','minimum':0,'description':'Screen x in pixels.'},'y':{'type':'" \
    "integer','minimum':0,'description':'Screen y in pixels.'}"
/* A PNG of 1280x800 is well under this; base64 makes it a third larger. */
#define PNG_MAX (16 * 1024 * 1024)

static json_t *t_screenshot(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    struct osbc_region r = {(int)mcp_num(args, "x", 0), (int)mcp_num(args, "y", 0),
                            (int)mcp_num(args, "width", 0), (int)mcp_num(args, "height", 0)};
    char *png;
    size_t len;
    struct osbc_error err;
    if (osbc_desktop_screenshot(c, mcp_str(args, "sandbox_id"), &r, mcp_num(args, "scale", 0), &png,
                                &len, &err) < 0)
        return mcp_fail(msg, cap, "screenshot", &err);
    if (len > PNG_MAX) {
        osbc_free(png);
        return mcp_failf(msg, cap, "the screenshot is %zu bytes; ask for a region or a scale", len);
    }
    char *b64 = osb_xmalloc(OSB_BASE64_ENCODED_SIZE(len));
    osb_base64_encode((const uint8_t *)png, len, b64);
    osbc_free(png);
    json_t *out = json_pack("{s:I,s:[{s:s,s:s,s:s}]}", "png_bytes", (json_int_t)len, MCP_CONTENT,
                            "type", "image", "mimeType", "image/png", "data", b64);
    free(b64);
    return out;
}

/* The body of a /desktop/mouse call, then execd's answer ({"x","y"}). */
static json_t *mouse(struct mcp *m, json_t *args, json_t *body, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c) {
        json_decref(body);
        return NULL;
    }
    char *text = json_dumps(body, JSON_COMPACT), *json = NULL;
    json_decref(body);
    struct osbc_error err;
    int rc = osbc_desktop_mouse(c, mcp_str(args, "sandbox_id"), text, &json, &err);
    free(text);
    if (rc < 0)
        return mcp_fail(msg, cap, "mouse", &err);
    return json && *json ? mcp_doc(json, msg, cap) : (osbc_free(json), json_object());
}

static json_t *t_click(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    const char *button = mcp_str(args, "button");
    json_t *b = json_pack("{s:s,s:i,s:i,s:s}", "action",
                          json_is_true(json_object_get(args, "double")) ? "double_click" : "click",
                          "x", (int)mcp_num(args, "x", 0), "y", (int)mcp_num(args, "y", 0),
                          "button", button ? button : "left");
    return mouse(m, args, b, msg, cap);
}

static json_t *t_scroll(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    json_t *b = json_pack("{s:s,s:i,s:i,s:i,s:i}", "action", "scroll", "x",
                          (int)mcp_num(args, "x", 0), "y", (int)mcp_num(args, "y", 0), "dx",
                          (int)mcp_num(args, "dx", 0), "dy", (int)mcp_num(args, "dy", 0));
    return mouse(m, args, b, msg, cap);
}

static json_t *t_type(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    struct osbc_error err;
    if (osbc_desktop_type(c, mcp_str(args, "sandbox_id"), mcp_str(args, "text"), &err) < 0)
        return mcp_fail(msg, cap, "type", &err);
    return json_pack("{s:s}", "status", "typed");
}

static json_t *t_key(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    json_t *keys = json_object_get(args, "keys"), *k;
    size_t n = json_array_size(keys), i;
    const char **v = osb_xcalloc(n + 1, sizeof *v);
    json_array_foreach(keys, i, k) v[i] = json_string_value(k);
    struct osbc_error err;
    int rc = osbc_desktop_press(c, mcp_str(args, "sandbox_id"), v, n, &err);
    free(v);
    if (rc < 0)
        return mcp_fail(msg, cap, "key", &err);
    return json_pack("{s:s}", "status", "pressed");
}

const struct mcp_tool mcp_desktop_tools[] = {
    {"desktop_screenshot", "Desktop screenshot",
     "A screenshot of the sandbox's desktop as a PNG image (the sandbox needs a display, e.g. "
     "one made from the desktop image). Optional region (x, y, width, height) and scale in "
     "(0, 1] to send fewer pixels.",
     MCP_OBJ(SID
             "," XY ",'width':{'type':'integer','minimum':0,'description':'Region width (0: whole "
             "screen).'},'height':{'type':'integer','minimum':0,'description':'Region height (0: "
             "whole screen).'},'scale':{'type':'number','exclusiveMinimum':0,'maximum':1,"
             "'description':'Downscale factor (1: full size).'}",
             "'sandbox_id'"),
     MCP_READ_ONLY, t_screenshot},
    {"desktop_click", "Click on the desktop",
     "Move the pointer to (x, y) and click a button (left by default; double for a double "
     "click). Returns the pointer {x, y}.",
     MCP_OBJ(SID "," XY
                 ",'button':{'type':'string','enum':['left','right','middle'],'default':'left',"
                 "'description':'Mouse button.'},'double':{'type':'boolean','default':false,"
                 "'description':'A double click.'}",
             "'sandbox_id','x','y'"),
     0, t_click},
    {"desktop_type", "Type text",
     "Type text on the desktop's keyboard, into the focused window (any Unicode text).",
     MCP_OBJ(SID ",'text':{'type':'string','minLength':1,'description':'The text to type.'}",
             "'sandbox_id','text'"),
     0, t_type},
    {"desktop_key", "Press keys",
     "Press a key combination at once, e.g. ['ctrl','c'], ['enter'], ['alt','f4']: modifiers "
     "ctrl, shift, alt, super; names such as enter, tab, escape, backspace, up, f5; or one "
     "character.",
     MCP_OBJ(SID ",'keys':{'type':'array','minItems':1,'maxItems':8,'items':{'type':'string',"
                 "'minLength':1},'description':'Keys pressed together, modifiers first.'}",
             "'sandbox_id','keys'"),
     0, t_key},
    {"desktop_scroll", "Scroll on the desktop",
     "Scroll at (x, y) by dx, dy wheel clicks (dy > 0 scrolls down). Returns the pointer.",
     MCP_OBJ(SID
             "," XY ",'dx':{'type':'integer','default':0,'description':'Wheel clicks right (< 0: "
             "left).'},'dy':{'type':'integer','default':0,'description':'Wheel clicks down (< 0: "
             "up).'}",
             "'sandbox_id','x','y'"),
     0, t_scroll},
    {NULL, NULL, NULL, NULL, 0, NULL},
};
