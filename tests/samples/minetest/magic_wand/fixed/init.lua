-- A wand that lights up the node you point at.
local function glow_target(pointed_thing)
	if pointed_thing.type ~= "node" then return nil end
	local pos = vector.new(pointed_thing.under.x, pointed_thing.under.y + 1, pointed_thing.under.z)
	return pos
end

minetest.register_tool("magic_wand:wand", {
	description = "Magic Wand",
	inventory_image = "default_stick.png",
	on_use = function(itemstack, user, pointed_thing)
		local pos = glow_target(pointed_thing)
		if pos and minetest.get_node(pos).name == "air" then
			minetest.set_node(pos, {name = "default:torch"})
		end
		return itemstack
	end,
})
