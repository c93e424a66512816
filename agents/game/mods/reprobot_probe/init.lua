-- reprobot's probe: shipped by reprobot and loaded into every reproduction world, under a name with a random
-- suffix per session (the folder here is only where it is kept), so no repository can name a mod after it.
--
-- It polls the runner's command channel (an HTTP server on 127.0.0.1) through Minetest's HTTP API, which the
-- server grants only because the world's config lists this mod, alone, in secure.http_mods; mod security stays
-- on. The channel's address is the setting "<this mod's name>.url".
-- Ops: state (position, look, wielded item, inventory, pointed node or entity, chat tail), dump (the registered
-- nodes, items, tools and chat commands: the knowledge base of this game version), look (set yaw/pitch).

local modname = minetest.get_current_modname()
local http = minetest.request_http_api()
local url = minetest.settings:get(modname .. ".url")
if not http or not url then
	minetest.log("error", "[" .. modname .. "] no HTTP API (is the mod in secure.http_mods?) or no " .. modname .. ".url")
	return
end

local chat_tail = {}
local function remember(text)
	table.insert(chat_tail, minetest.strip_colors(tostring(text)))
	while #chat_tail > 40 do table.remove(chat_tail, 1) end
end

-- Everything the server tells a player goes through these two: command replies, mod messages, broadcasts.
local send_player, send_all = minetest.chat_send_player, minetest.chat_send_all
minetest.chat_send_player = function(name, text) remember(text); return send_player(name, text) end
minetest.chat_send_all = function(text) remember(text); return send_all(text) end
minetest.register_on_chat_message(function(name, message) remember("<" .. name .. "> " .. message) end)
minetest.register_on_chatcommand(function(name, command, params) remember("/" .. command .. " " .. params) end)

local function the_player()
	return minetest.get_connected_players()[1]
end

local function pointed(player)
	local eye = vector.add(player:get_pos(), {x = 0, y = player:get_properties().eye_height, z = 0})
	local far = vector.add(eye, vector.multiply(player:get_look_dir(), 6))
	for thing in minetest.raycast(eye, far, true, false) do
		if thing.type == "object" and thing.ref ~= player then
			local ent = thing.ref:get_luaentity()
			return {type = "object", name = ent and ent.name or "player", pos = thing.ref:get_pos()}
		elseif thing.type == "node" then
			return {type = "node", name = minetest.get_node(thing.under).name, pos = thing.under}
		end
	end
	return {type = "nothing"}
end

local function state()
	local player = the_player()
	if not player then return {joined = false, chat = chat_tail} end
	local inv = {}
	for i, stack in ipairs(player:get_inventory():get_list("main") or {}) do
		if not stack:is_empty() then table.insert(inv, {slot = i, item = stack:to_string()}) end
	end
	local nearby = {}
	for _, obj in ipairs(minetest.get_objects_inside_radius(player:get_pos(), 8)) do
		local ent = obj:get_luaentity()
		if ent and ent.name then table.insert(nearby, {name = ent.name, pos = obj:get_pos()}) end
	end
	return {
		joined = true, name = player:get_player_name(), pos = player:get_pos(), nearby = nearby,
		eye_height = player:get_properties().eye_height,
		yaw = player:get_look_horizontal(), pitch = player:get_look_vertical(),
		hp = player:get_hp(), wielded = player:get_wielded_item():to_string(), wield_index = player:get_wield_index(),
		inventory = inv, pointed = pointed(player), chat = chat_tail,
	}
end

local function dump_knowledge()
	local nodes, items, tools, commands = {}, {}, {}, {}
	local function entry(name, def)
		local text = minetest.get_translated_string("en", def.description or "")
		return {name = name, description = minetest.strip_colors(text)}
	end
	for name, def in pairs(minetest.registered_nodes) do table.insert(nodes, entry(name, def)) end
	for name, def in pairs(minetest.registered_craftitems) do table.insert(items, entry(name, def)) end
	for name, def in pairs(minetest.registered_tools) do table.insert(tools, entry(name, def)) end
	for name, def in pairs(minetest.registered_entities) do table.insert(items, {name = name, description = "entity"}) end
	for name, def in pairs(minetest.registered_chatcommands) do
		table.insert(commands, {name = name, params = def.params or "", description = def.description or ""})
	end
	return {version = minetest.get_version().string, nodes = nodes, items = items, tools = tools, commands = commands}
end

local function run(op)
	if op.op == "state" then return state() end
	if op.op == "dump" then return dump_knowledge() end
	if op.op == "look" then
		local player = the_player()
		if not player then return {error = "no player"} end
		if op.yaw then player:set_look_horizontal(op.yaw) end
		if op.pitch then player:set_look_vertical(op.pitch) end
		return state()
	end
	return {error = "unknown op " .. tostring(op.op)}
end

local busy = false
local function poll()
	if busy then return end
	busy = true
	http.fetch({url = url .. "/poll", timeout = 5}, function(res)
		busy = false
		if not res.succeeded or res.code ~= 200 then return end
		local ops = minetest.parse_json(res.data) or {}
		for _, op in ipairs(ops) do
			local ok, result = pcall(run, op)
			if not ok then result = {error = tostring(result)} end
			http.fetch({
				url = url .. "/result", method = "POST", timeout = 5,
				extra_headers = {"Content-Type: application/json"},
				data = minetest.write_json({id = op.id, result = result}),
			}, function() end)
		end
	end)
end

local elapsed = 0
minetest.register_globalstep(function(dtime)
	elapsed = elapsed + dtime
	if elapsed >= 0.1 then elapsed = 0; poll() end
end)
minetest.log("action", "[" .. modname .. "] polling " .. url)
