-- /coins shows your coins, /coins add <n> adds to them.
local purse = {}

minetest.register_chatcommand("coins", {
	params = "[add <n>]",
	description = "Show or add coins",
	func = function(name, param)
		local n = tonumber(param:match("^add%s+(%d+)$"))
		if n then
			-- add to what the purse holds
			purse[name] = (purse[name] or 0) + n
			return true, "Added " .. n .. " coins"
		end
		return true, "You have " .. (purse[name] or 0) .. " coins"
	end,
})
