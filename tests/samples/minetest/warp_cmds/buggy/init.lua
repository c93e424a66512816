-- /warp <x> <y> <z> or /warp <name> of a saved warp.
local warps = {home = {x = 0, y = 9, z = 0}}

local function parse_coords(param)
	local x, y, z = param:match("^(%S+)%s+(%S+)%s+(%S+)$")
	-- BUG: "~" and other words are not numbers
	return {x = tonumber(x) + 0, y = tonumber(y) + 0, z = tonumber(z) + 0}
end

minetest.register_chatcommand("warp", {
	params = "<x> <y> <z> | <name>",
	description = "Teleport to coordinates or a saved warp",
	func = function(name, param)
		local player = minetest.get_player_by_name(name)
		local target = warps[param] or parse_coords(param)
		player:set_pos(target)
		return true, "Warped to " .. minetest.pos_to_string(target)
	end,
})
