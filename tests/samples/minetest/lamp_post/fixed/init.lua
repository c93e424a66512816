-- A lamp post that remembers who placed it.
minetest.register_node("lamp_post:lamp", {
	description = "Lamp Post",
	tiles = {"default_steel_block.png"},
	light_source = 12,
	groups = {cracky = 2},
	after_place_node = function(pos, placer)
		local meta = minetest.get_meta(pos)
		local owner = placer:get_player_name()
		local settings = minetest.deserialize(meta:get_string("settings")) or {color = "white"}
		-- a fresh node has no settings yet: default colour
		meta:set_string("infotext", "Lamp of " .. owner .. " (" .. settings.color .. ")")
	end,
})
