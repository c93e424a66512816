-- /warp <x> <y> <z> or /warp <name> of a saved warp.
local warps = {home = {x = 0, y = 9, z = 0}}

local function parse_coords(param)
	local x, y, z = param:match("^(%S+)%s+(%S+)%s+(%S+)$")
	x, y, z = tonumber(x), tonumber(y), tonumber(z)
	if not (x and y and z) then return nil end
	return {x = x, y = y, z = z}
end

minetest.register_chatcommand("warp", {
	params = "<x> <y> <z> | <name>",
	description = "Teleport to coordinates or a saved warp",
	func = function(name, param)
		local player = minetest.get_player_by_name(name)
		local target = warps[param] or parse_coords(param)
		if not target then return false, "Usage: /warp <x> <y> <z> | <name>" end
		player:set_pos(target)
		return true, "Warped to " .. minetest.pos_to_string(target)
	end,
})
